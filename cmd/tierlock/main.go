// Command tierlock inspects and repairs the lock queues that tierlock,
// Curator and kazoo keep on ZooKeeper:
//
//	tierlock ls     [flags] ROOT|PATH      one line per lock under ROOT and a total; PATH's queue, holder first
//	tierlock watch  [flags] ROOT|PATH      follow the locks under ROOT, or PATH's queue, until interrupted
//	tierlock revoke [flags] PATH|NODE      ask the holder (or NODE) to release: writes __REVOKE__ into its data
//	tierlock break  [flags] -yes PATH|NODE delete the holder's node (or NODE): the lock passes on at once
//	tierlock create [flags] [PATH]         create the chroot -zk names (host:port/myapp), and PATH below it
//
// A PATH is a lock path: a znode with lock nodes among its children. A
// ROOT is a znode with lock paths below it (a registry's root): ls shows
// one line per lock, in natural order (job-2 before job-10: who holds it,
// since when, with which fencing token, how many processes wait), a legend
// and a total, -l every node; watch follows every lock below ROOT, those
// created later included, a line per change. ZooKeeper has one node per
// waiting process, not per goroutine, and keeps no hand-off time: the
// table marks what is a bound (≥) or unknown (?).
//
// Every subcommand takes -zk host:port,... (default $TIERLOCK_ZK_SERVERS or
// 127.0.0.1:2181; a chroot after the last, host:port/myapp, puts every
// path under /myapp, as the Java client, Curator and kazoo read it),
// -digest user:password (default $TIERLOCK_DIGEST) for ZooKeeper digest
// ACLs, -tls, -tls-ca FILE, -tls-cert FILE, -tls-key FILE and
// -tls-server-name NAME for the servers' secure client port (the files
// default to $TIERLOCK_TLS_CA, $TIERLOCK_TLS_CERT, $TIERLOCK_TLS_KEY; a
// client certificate is also an x509 identity in ACLs), -timeout
// (bounding the connection and the request) and -json (one JSON document,
// or one line per listing under watch). Exit codes: 0 ok; 1 failed; 2
// usage (unknown subcommand, bad flag or argument, invalid path, break
// without -yes); 3 ZooKeeper unreachable within -timeout, or refusing
// TLS; 4 not permitted (the node's or its parent's ACL refuses these
// credentials); 5 no such node (or, for revoke and break on a PATH, nobody
// holds it; or the chroot does not exist).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// Exit codes, documented in the package comment and in docs/operations.md.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitUnreachable = 3
	exitNoAuth      = 4
	exitNoNode      = 5
)

// The errors that choose an exit code other than exitFailed.
var (
	errUsage       = errors.New("usage")
	errUnreachable = errors.New("cannot reach ZooKeeper")
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command: args without the program name. An interrupt or
// SIGTERM ends a watch (exit 0) or abandons a request (exit 1).
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runContext(ctx, args, stdout, stderr)
}

// subcommand runs one subcommand with its own flags.
type subcommand struct {
	usage string // arguments after the flags
	help  string
	run   func(ctx context.Context, c *cli, args []string) error
}

var subcommands = map[string]subcommand{
	"ls":     {"ROOT|PATH", "one line per lock under ROOT (held since, token, waiting processes, holder) and a total; PATH's queue", runLs},
	"watch":  {"ROOT|PATH", "a line each time a lock under ROOT changes, or PATH's queue each time it changes", runWatch},
	"revoke": {"PATH|NODE", "ask the holder of PATH (every holder, for readers), or NODE, to release: writes __REVOKE__ into the node's data", runRevoke},
	"break":  {"-yes PATH|NODE", "delete the node of PATH's holder, or NODE: the lock passes to the next in line", runBreak},
	"create": {"[PATH]", "create the chroot -zk names (host:port/myapp), and PATH below it, with missing parents", runCreate},
}

// order lists the subcommands in help.
var order = []string{"ls", "watch", "revoke", "break", "create"}

// runContext is run with the context the caller chooses (tests cancel a
// watch through it).
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	}
	sc, ok := subcommands[name]
	if !ok {
		fmt.Fprintf(stderr, "tierlock: unknown subcommand %q\n", name)
		usage(stderr)
		return exitUsage
	}
	c := newCLI(name, sc, stdout, stderr)
	rest, err := c.parse(args[1:])
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if err == nil {
		err = sc.run(ctx, c, rest)
	}
	c.close()
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "tierlock %s: %v\n", name, err)
	code := exitCode(err)
	switch code {
	case exitUsage:
		fmt.Fprintf(stderr, "usage: tierlock %s [flags] %s (tierlock %s -h for the flags)\n", name, sc.usage, name)
	case exitNoAuth:
		fmt.Fprintln(stderr, "the ACL refuses these credentials: pass the fleet's with -digest user:password or $TIERLOCK_DIGEST")
	}
	return code
}

// exitCode maps an error to the documented exit codes.
func exitCode(err error) int {
	switch {
	case errors.Is(err, errUsage), errors.Is(err, zklock.ErrInvalidPath), errors.Is(err, zklock.ErrInvalidOption):
		return exitUsage
	case errors.Is(err, errUnreachable):
		return exitUnreachable
	case errors.Is(err, zk.ErrNoAuth), errors.Is(err, zk.ErrAuthFailed):
		return exitNoAuth
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, errNoHolder):
		return exitNoNode
	}
	return exitFailed
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: tierlock SUBCOMMAND [flags] ARGS")
	fmt.Fprintln(w)
	for _, n := range order {
		sc := subcommands[n]
		fmt.Fprintf(w, "  %-7s %-15s %s\n", n, sc.usage, sc.help)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "flags of every subcommand: -zk host:port,...[/chroot] -digest user:password -timeout 10s -json")
	fmt.Fprintln(w, "  and for TLS: -tls -tls-ca FILE -tls-cert FILE -tls-key FILE -tls-server-name NAME")
	fmt.Fprintln(w, "exit codes: 0 ok, 1 failed, 2 usage, 3 ZooKeeper unreachable, 4 not permitted (ACL), 5 no such node")
}

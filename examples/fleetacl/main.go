// Command fleetacl holds a lock the way every process of a fleet should
// once the fleet's lock paths are closed to strangers: it authenticates
// with the fleet's digest credentials and creates its lock node, and any
// lock path it has to make, with an ACL that lets the fleet do everything
// and the world only read. A client without the credentials can then list
// the queue (tierlock ls) but can neither delete the holder's node nor
// queue a node of its own. docs/operations.md walks through the set-up.
//
//	FLEET_PASSWORD=... go run ./examples/fleetacl -path /locks/jobs/report
//
// -zk defaults to $TIERLOCK_ZK_SERVERS, else 127.0.0.1:2181 (where
// scripts/zk.sh start serves one); with no server there, it says so
// within zklock.ConnectTimeout (10s) and exits 1. It holds until
// interrupted (or for -for), then releases.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "fleetacl:", err)
		os.Exit(1)
	}
}

// run is the whole program; main and the test call it.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fleetacl", flag.ContinueOnError)
	zkFlag := fs.String("zk", cmp.Or(os.Getenv("TIERLOCK_ZK_SERVERS"), "127.0.0.1:2181"), "ZooKeeper servers, host:port,... ($TIERLOCK_ZK_SERVERS, else 127.0.0.1:2181)")
	path := fs.String("path", "/locks/jobs/report", "lock path")
	user := fs.String("user", "fleet", "the fleet's digest user")
	password := fs.String("password", os.Getenv("FLEET_PASSWORD"), "the fleet's digest password (default $FLEET_PASSWORD)")
	label := fs.String("label", "fleetacl", "label in the lock node's data")
	hold := fs.Duration("for", 0, "hold this long, then release (0: until interrupted)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if strings.Trim(*zkFlag, ", ") == "" || *password == "" {
		return errors.New("-zk (or $TIERLOCK_ZK_SERVERS) and -password (or $FLEET_PASSWORD) are required")
	}

	// The credentials go out before the session's first lock request, and
	// again on every reconnect (ZooKeeper keeps them per connection).
	// Connect waits for the session: give it a deadline, so that a server
	// that is not there is an error, not a hang.
	cctx, cancel := context.WithTimeout(ctx, zklock.ConnectTimeout)
	deadline, _ := cctx.Deadline()
	bound := time.Until(deadline).Round(100 * time.Millisecond)
	s, err := zklock.Connect(cctx, strings.Split(*zkFlag, ","),
		zklock.WithDigestAuth(*user, *password),
		zklock.WithLogger(slog.New(slog.DiscardHandler)))
	cancel()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no ZooKeeper reachable at %s within %v (start one with scripts/zk.sh start, or give -zk host:port): %w",
			*zkFlag, bound, err)
	}
	if err != nil {
		return err
	}
	defer s.Close()

	// The fleet may do everything, the world may only read. ZooKeeper
	// checks a create or delete of a lock node against the lock path's
	// ACL, so the lock path (made by the lock with this ACL when missing)
	// is what keeps strangers from jumping the queue or breaking a hold.
	fleet := append(zk.DigestACL(zk.PermAll, *user, *password), zk.WorldACL(zk.PermRead)...)
	lock, err := tier.New(s, *path, tier.WithLockOptions(zklock.WithACL(fleet), zklock.WithLabel(*label)))
	if err != nil {
		return err
	}
	defer lock.Close()
	held, err := lock.Acquire(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "holding %s as %s (world: read only)\n", *path, *user)

	var timeout <-chan time.Time
	if *hold > 0 {
		t := time.NewTimer(*hold)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-held.Done(): // lost: the node was deleted, the session expired, ...
		fmt.Fprintf(stdout, "lost: %v\n", context.Cause(held))
		_ = lock.Release(held) // frees the local gate; it reports the loss
		return nil
	case <-ctx.Done():
	case <-timeout:
	}
	if err := lock.Release(held); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "released")
	return nil
}

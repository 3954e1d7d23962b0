package main

import (
	"fmt"
	"os"
)

// break refuses to delete a node without -yes, before it connects: a
// usage error, exit code 2.
func Example_breakWithoutYes() {
	code := run([]string{"break", "/locks/jobs/report"}, os.Stdout, os.Stdout)
	fmt.Println("exit", code)
	// Output:
	// tierlock break: usage: break deletes /locks/jobs/report's node and hands the lock on while its holder may still be working; add -yes to confirm
	// usage: tierlock break [flags] -yes PATH|NODE (tierlock break -h for the flags)
	// exit 2
}

// An unknown subcommand prints the list of subcommands and the exit codes.
func Example_unknownSubcommand() {
	code := run([]string{"frob"}, os.Stdout, os.Stdout)
	fmt.Println("exit", code)
	// Output:
	// tierlock: unknown subcommand "frob"
	// usage: tierlock SUBCOMMAND [flags] ARGS
	//
	//   ls      ROOT|PATH       one line per lock under ROOT (held since, token, waiting processes, holder) and a total; PATH's queue
	//   watch   ROOT|PATH       a line each time a lock under ROOT changes, or PATH's queue each time it changes
	//   revoke  PATH|NODE       ask the holder of PATH (every holder, for readers), or NODE, to release: writes __REVOKE__ into the node's data
	//   break   -yes PATH|NODE  delete the node of PATH's holder, or NODE: the lock passes to the next in line
	//   create  [PATH]          create the chroot -zk names (host:port/myapp), and PATH below it, with missing parents
	//
	// flags of every subcommand: -zk host:port,...[/chroot] -digest user:password -timeout 10s -json
	//   and for TLS: -tls -tls-ca FILE -tls-cert FILE -tls-key FILE -tls-server-name NAME
	// exit codes: 0 ok, 1 failed, 2 usage, 3 ZooKeeper unreachable, 4 not permitted (ACL), 5 no such node
	// exit 2
}

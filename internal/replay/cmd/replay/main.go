// Command replay replays the trace files of a recorded run through
// internal/replay, the Go rendering of model/twotier.pml's client steps:
//
//	go run ./internal/replay/cmd/replay [-n N] DIR
//
// It reads DIR/trace-*.jsonl (written by a build with the tierlocktrace
// tag, TIERLOCK_TRACE=DIR) and prints the traces, steps, holds, distinct
// model states and time taken, the lease renewals accepted by what showed
// their touch at the leader (a handshake, a chain), then PASS, or the
// first step the model does
// not allow with its process and model state (exit status 1); -n prints
// the first N such steps. A line "outside twotier.pml:" says what the
// model does not have and how it was checked (expiry-only sessions, read
// and lease holds, recipe turns; see internal/replay's policy.go and
// recipe.go).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/tierlock/tierlock/internal/replay"
)

func main() {
	n := flag.Int("n", 1, "disallowed steps to print")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: replay [-n N] DIR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	c := replay.New()
	if err := c.ReplayDir(flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	r := c.Result()
	fmt.Printf("%d traces, %d steps, %d holds, %d states, %v\n", r.Traces, r.Steps, r.Holds, r.States, r.Took.Round(1e6))
	if n := r.Renews; n.Handshake+n.Chain > 0 {
		fmt.Printf("lease renewals (bounds.go): %d shown by a handshake, %d by a chain\n", n.Handshake, n.Chain)
	}
	if tm := r.Timing(); tm != "" {
		fmt.Println("slowest steps after the model's (timing.go):", tm)
	}
	if o := r.Outside(); o != "" {
		fmt.Println("outside twotier.pml:", o)
	}
	if len(r.Violations) == 0 {
		fmt.Println("PASS")
		return
	}
	fmt.Printf("FAIL: %d disallowed step(s)\n", len(r.Violations))
	for i, v := range r.Violations {
		if i == *n {
			break
		}
		fmt.Println(v)
	}
	os.Exit(1)
}

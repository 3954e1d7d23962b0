// Command replay replays the trace files of a recorded run through
// internal/replay, the Go rendering of model/twotier.pml's client steps:
//
//	go run ./internal/replay/cmd/replay DIR
//
// It reads DIR/trace-*.jsonl (written by a build with the tierlocktrace
// tag, TIERLOCK_TRACE=DIR) and prints the traces, steps, distinct model
// states and time taken, then PASS, or the first step the model does not
// allow with its process and model state (exit status 1).
package main

import (
	"fmt"
	"os"

	"github.com/tierlock/tierlock/internal/replay"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: replay DIR")
		os.Exit(2)
	}
	c := replay.New()
	if err := c.ReplayDir(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	r := c.Result()
	fmt.Printf("%d traces, %d steps, %d holds, %d states, %v\n", r.Traces, r.Steps, r.Holds, r.States, r.Took.Round(1e6))
	if v := r.First(); v != nil {
		fmt.Printf("FAIL: %d disallowed step(s); first: %v\n", len(r.Violations), v)
		os.Exit(1)
	}
	fmt.Println("PASS")
}

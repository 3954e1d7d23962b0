package cells_test

import (
	"fmt"
	"time"

	"github.com/tierlock/tierlock/stress/internal/cells"
)

// A plan restricted to two process counts, and the cells it makes: their
// keys name them in a results file, so a resumed matrix skips those done.
func ExampleSpec_Cells() {
	s, _ := cells.Preset("quick")
	s.Topologies = []cells.Topology{cells.Standalone}
	s.Procs, s.Goroutines = []int{2, 4}, []int{8}
	s.Holds = []time.Duration{0, time.Millisecond}
	for _, c := range s.Cells() {
		fmt.Println(c.Key(), "|", c.Shape(), "|", c.Load())
	}
	// Output:
	// standalone/p2/g8/l1/h0s/r0 | 2×8 | 1 path, hold 0
	// standalone/p2/g8/l1/h1ms/r0 | 2×8 | 1 path, hold 1ms
	// standalone/p4/g8/l1/h0s/r0 | 4×8 | 1 path, hold 0
	// standalone/p4/g8/l1/h1ms/r0 | 4×8 | 1 path, hold 1ms
}

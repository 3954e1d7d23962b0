package runonce_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestSimultaneousTimers: eight instances whose timers fire together
// (released by one barrier), nine ticks, with WithSpread (every attempt
// writes) and without. The decisions race on the run node's version:
// three conflicts in a row ended an attempt as Failed "version conflict"
// with a "run skipped: lock failed" warning, where the fleet's own
// contention had decided (with WithSpread 27-34 of 72). A lost race is an
// ordinary skip: no attempt fails, nothing is warned, and each tick runs
// once.
func TestSimultaneousTimers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: nine ticks of eight instances, about 4 s")
	}
	for _, spread := range []bool{true, false} {
		t.Run(fmt.Sprint("spread=", spread), func(t *testing.T) {
			root := zktest.Path(t)
			const n, ticks, w = 8, 9, 100 * time.Millisecond
			var rs []*runonce.Runner
			var logs []*zktest.SyncBuffer
			var mu sync.Mutex
			failed := 0
			for i := range n {
				s, l := logged(t, zktest.Servers(t))
				opts := []runonce.Option{runonce.WithWindow(w), runonce.WithInstanceName(fmt.Sprint("node-", i)),
					runonce.WithObserver(func(e runonce.Event) {
						if e.Outcome == runonce.Failed {
							mu.Lock()
							failed++
							mu.Unlock()
							t.Logf("node-%d: %v", i, e.Err)
						}
					})}
				if spread {
					opts = append(opts, runonce.WithSpread())
				}
				r, err := runonce.New(s, root, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				rs, logs = append(rs, r), append(logs, l)
			}
			ctx := zktest.Context(t, 60*time.Second)
			for tick := range ticks {
				start := make(chan struct{})
				var wg sync.WaitGroup
				ran := make([]bool, n)
				for i, r := range rs {
					wg.Go(func() {
						<-start
						ran[i], _ = runOnce(ctx, r, "job", nil)
					})
				}
				time.Sleep(5 * time.Millisecond)
				close(start)
				zktest.Wait(t, "the tick's runners", &wg)
				runs := 0
				for _, ok := range ran {
					if ok {
						runs++
					}
				}
				if runs > 1 {
					t.Errorf("tick %d ran %d times", tick, runs)
				}
				time.Sleep(w + 100*time.Millisecond)
			}
			warned := 0
			for _, l := range logs {
				warned += strings.Count(l.String(), "lock failed")
			}
			if failed > 0 || warned > 0 {
				t.Errorf("%d of %d attempts failed, %d warned \"lock failed\": a lost race is a skip", failed, n*ticks, warned)
			}
		})
	}
}

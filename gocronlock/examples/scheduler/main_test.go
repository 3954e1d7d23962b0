package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
)

// The program runs against one real ZooKeeper shared by the package's
// tests (the test may use internal/; the program may not).
func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

// TestTwoCopies runs the program twice at once, in both modes: each job
// ticks every second, and no tick of a job prints twice. Under the Locker
// each run names its tick, and the ticks are compared: on a loaded machine
// a first tick fired 585 ms late ran 479 ms before the next, each once. The
// elector's leader names none; its runs are compared by time.
func TestTwoCopies(t *testing.T) {
	for _, elect := range []bool{false, true} {
		t.Run(fmt.Sprintf("elector=%v", elect), func(t *testing.T) {
			root := fmt.Sprintf("/gocronlock-examples-test/%d-%v", os.Getpid(), elect)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			outs := make([]zktest.SyncBuffer, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range outs {
				wg.Go(func() { errs[i] = run(ctx, &outs[i], zktest.Servers(t), root, time.Second, elect) })
			}
			zktest.Wait(t, "the two copies", &wg)
			runs := map[string][]time.Time{}
			ticks := map[string]int{} // "job tick" under the Locker
			for i := range outs {
				t.Logf("copy %d:\n%s", i, outs[i].String())
				if errs[i] != nil {
					t.Fatalf("copy %d: %v", i, errs[i])
				}
				for _, line := range strings.Split(outs[i].String(), "\n") {
					var at, job, tick string
					n, _ := fmt.Sscanf(line, "%s %s ran the tick of %s", &at, &job, &tick)
					if n >= 2 {
						ts, _ := time.Parse("15:04:05.000", at)
						runs[job] = append(runs[job], ts)
					}
					if n == 3 {
						ticks[job+" "+tick]++
					}
				}
			}
			for _, job := range []string{"invoices:", "reports:", "cleanup:"} {
				if len(runs[job]) < 2 {
					t.Errorf("%s ran %d times in 4 s, want at least 2", job, len(runs[job]))
				}
				if !elect {
					continue // the ticks are checked below
				}
				for i, a := range runs[job] {
					for _, b := range runs[job][i+1:] {
						if d := a.Sub(b).Abs(); d < 500*time.Millisecond {
							t.Errorf("%s ran twice %v apart", job, d)
						}
					}
				}
			}
			if !elect && len(ticks) == 0 {
				t.Error("no run named its tick")
			}
			for tick, n := range ticks {
				if n > 1 {
					t.Errorf("%s ran %d times", tick, n)
				}
			}
		})
	}
}

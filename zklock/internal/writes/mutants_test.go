//go:build tierlockmutants

package writes_test

import (
	"testing"

	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// The seeded bugs of the write path, each the code as it stood before a
// fix or a bug of the class a review found, must be found by the explorer
// by itself: the first seed, counting from 1, whose schedule breaks a
// property, and which property (docs/write-path.md lists them).
//
//	go test -tags tierlockmutants -run TestExploreFindsSeededBugs -v ./zklock/internal/writes/
func TestExploreFindsSeededBugs(t *testing.T) {
	bugs := []string{mutant.CreateBeforeDelete, mutant.TxnUnknownRequeued, mutant.ApartStops, mutant.UnknownBeforeWire}
	for _, m := range append(bugs, writes.NewMutants...) {
		t.Run(m, func(t *testing.T) {
			defer mutant.Set(m)()
			const limit = 100000
			for seed := uint64(1); seed <= limit; seed++ {
				evs, fails, _ := explore(seed, *steps, false)
				if len(fails) == 0 {
					continue
				}
				f := &failure{seed: seed, events: evs, failures: fails}
				t.Logf("found after %d schedules: %s (replay: %s=%s go test -tags tierlockmutants -run TestExploreReplay ./zklock/internal/writes -explore.seed=%d)",
					seed, fails[0], mutant.Env, m, seed)
				if testing.Verbose() {
					t.Log(f.report())
				}
				return
			}
			t.Fatalf("%s not found in %d schedules", m, limit)
		})
	}
}

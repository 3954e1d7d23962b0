package runrec

import (
	"math/rand/v2"
	"testing"
)

// spreadShares plays a job of gocronlock's TestFleetSpread on the record:
// three instances whose timers are 0, 150 and 300 ms apart, the job
// ticking every second for 10 ticks, every attempt writing; a tick's
// attempts come in the timers' order, or, with probability shuffle, in a
// random one (a loaded machine's). The fleet's 20 jobs tick together, so
// they share their orders: one job's shares are the fleet's. It returns
// each instance's runs of ticks 1-8 (the ones the fleet test counts).
func spreadShares(rng *rand.Rand, shuffle float64) map[string]int {
	off := map[string]int64{"node-0": 0, "node-1": 150, "node-2": 300}
	runs := map[string]int{}
	var s sim
	for n := int64(0); n < 10; n++ {
		order := []string{"node-0", "node-1", "node-2"}
		if rng.Float64() < shuffle {
			rng.Shuffle(3, func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		for i, by := range order {
			if s.attempt(by, n*1000+int64(i)*10, n*1000+off[by], Derive) && n >= 1 && n <= 8 {
				runs[by]++
			}
		}
	}
	return runs
}

// TestSpreadSharesOverArrivalOrders backs TestFleetSpread's bounds (loaded
// run 37: node-2 made 22.6 % of the runs, against a floor of 25 %). In the
// timers' order the runs go round: of the 8 ticks counted, 3, 3 and 2, so
// one instance makes exactly 25 % (the old floor: no margin at all). When a
// fifth of the ticks come in another order, runs move: over 2,000 fleets
// each instance still makes at least an eighth of the runs (1 of 8 ticks)
// and none more than half (without WithSpread, the first timer's instance
// makes them all).
func TestSpreadSharesOverArrivalOrders(t *testing.T) {
	rng := rand.New(rand.NewPCG(57, 37))
	if got := spreadShares(rng, 0); got["node-0"]+got["node-1"]+got["node-2"] != 8 || min(got["node-0"], got["node-1"], got["node-2"]) != 2 {
		t.Fatalf("in the timers' order, the 8 ticks' runs are %v, want 3, 3 and 2", got)
	}
	lo, hi := 1.0, 0.0
	for range 2000 {
		got := spreadShares(rng, 0.2)
		total := float64(got["node-0"] + got["node-1"] + got["node-2"])
		for _, by := range []string{"node-0", "node-1", "node-2"} {
			lo, hi = min(lo, float64(got[by])/total), max(hi, float64(got[by])/total)
		}
	}
	t.Logf("shares over 2,000 fleets, a fifth of the ticks in a random order: %.3f to %.3f", lo, hi)
	if lo < 0.125 || hi > 0.5 {
		t.Errorf("shares from %.3f to %.3f, want at least 1/8 and at most 1/2", lo, hi)
	}
}

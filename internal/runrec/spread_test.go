package runrec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// deriver is how an instance reads a run node: Derive, or an older
// version's derivation (a fleet upgraded one instance at a time).
type deriver func(data []byte, mtime, mzxid int64) Last

// deriveBefore43 is Derive as an earlier version had it: a write that was
// not a run always added its writer to Since, so an instance that wrote
// once since the last run and left stayed there until the next run.
func deriveBefore43(data []byte, mtime, mzxid int64) Last {
	l := Derive(data, mtime, mzxid)
	if r, ok := Decode(data); ok && !l.Ran {
		l.Since = appendNew(r.Since, r.By, MaxRecent)
	}
	return l
}

// sim is a job's run node under a fleet that spreads its runs: the
// Locker's attempt in miniature (read, Yields, write, Verdict), on one
// leader's clock, each tick's attempts within the window of its first,
// the ticks a second apart.
type sim struct {
	data  []byte
	mtime int64
}

// attempt is by's attempt at now of tick (a named tick, a Locker's
// ClaimTick; 0: a claim without a name), reading the node with derive; it
// reports whether by ran.
func (s *sim) attempt(by string, now, tick int64, derive deriver) bool {
	prev := derive(s.data, s.mtime, 1<<32)
	r := Record{Last: prev.At, LastBy: prev.By, Runs: prev.Runs, Window: w, By: by,
		Recent: prev.Recent, Since: prev.Since, Yield: prev.Yields(by),
		Tick: tick, LastTick: prev.Tick, Ticks: prev.Ticks, Floor: prev.Floor}
	if s.data != nil {
		r.Prev, r.Epoch = s.mtime, 1
	}
	s.data, s.mtime = r.Encode(), now
	return r.Verdict(now, 1) == Run
}

// tick plays one tick: the instances in order; it returns who ran.
func (s *sim) tick(n int64, order []string, derive func(by string) deriver) []string {
	var ran []string
	for i, by := range order {
		if s.attempt(by, n*1000+int64(i)*10, 0, derive(by)) {
			ran = append(ran, by)
		}
	}
	return ran
}

// TestSpreadLeaveCostsOneTick, on the record alone: two instances, B
// skips once and leaves. Before, A stepped back on every tick after (B
// stayed in Since: only a run cleared it); now the tick left to B is lost
// and the next runs.
func TestSpreadLeaveCostsOneTick(t *testing.T) {
	var s sim
	now := func(string) deriver { return Derive }
	if ran := s.tick(1, []string{"A", "B"}, now); fmt.Sprint(ran) != "[A]" {
		t.Fatalf("tick 1: %v", ran)
	}
	var got []string
	for n := int64(2); n < 12; n++ {
		got = append(got, fmt.Sprint(s.tick(n, []string{"A"}, now)))
	}
	if want := "[[] [A] [A] [A] [A] [A] [A] [A] [A] [A]]"; fmt.Sprint(got) != want {
		t.Errorf("A alone after B left: %v, want %s", got, want)
	}
}

// TestSpreadFleetChurn: random fleets of up to six instances that leave
// and come back, every order of arrival, 5,000 ticks per seed: never two
// runs in a tick, and a tick lost (instances came, none ran) only for an
// instance that left: at most one lost tick per departure. The runs spread:
// in the ticks of a stable fleet of three, each instance makes a third.
func TestSpreadFleetChurn(t *testing.T) {
	now := func(string) deriver { return Derive }
	for seed := range uint64(5) {
		lost, left := churn(t, seed, true, now)
		t.Logf("seed %d: %d ticks lost, %d departures", seed, lost, left)
	}
	var s sim
	per := map[string]int{}
	for n := int64(1); n <= 300; n++ {
		for _, by := range s.tick(n, []string{"A", "B", "C"}, now) {
			per[by]++
		}
	}
	for _, by := range []string{"A", "B", "C"} {
		if per[by] != 100 {
			t.Errorf("a stable fleet of three, 300 ticks: %v, want 100 each", per)
		}
	}
}

// churn plays 5,000 ticks of a fleet whose instances leave and come back
// at random, and returns the ticks lost and the departures.
// With charged, each tick lost must follow a departure not charged yet.
func churn(t *testing.T, seed uint64, charged bool, derive func(by string) deriver) (lost, left int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 43))
	names := []string{"n0", "n1", "n2", "n3", "n4", "n5"}
	present := map[string]bool{"n0": true, "n1": true, "n2": true}
	var s sim
	for n := int64(1); n <= 5000; n++ {
		for _, name := range names {
			switch {
			case present[name] && rng.IntN(100) == 0:
				delete(present, name)
				left++
			case !present[name] && rng.IntN(50) == 0:
				present[name] = true
			}
		}
		var order []string
		for _, name := range names {
			if present[name] {
				order = append(order, name)
			}
		}
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		ran := s.tick(n, order, derive)
		if len(ran) > 1 {
			t.Fatalf("seed %d, tick %d: %v ran", seed, n, ran)
		}
		if len(order) > 0 && len(ran) == 0 {
			lost++
			if charged && lost > left {
				t.Errorf("seed %d, tick %d lost: %d ticks lost after %d departures", seed, n, lost, left)
				charged = false // once
			}
		}
	}
	return lost, left
}

// TestSpreadMixedFleet (a fleet upgraded one instance at a time):
// instances that read the record as the earlier version did
// (deriveBefore43) beside ones that read it as now. The record's format
// is the same; the rule decides each tick as ever, so none runs twice;
// the ticks lost stay bounded by the departures, where a fleet of old
// instances alone stops the job.
func TestSpreadMixedFleet(t *testing.T) {
	old := func(string) deriver { return deriveBefore43 }
	lostOld, leftOld := churn(t, 1, false, old)
	t.Logf("old instances alone: %d ticks lost, %d departures", lostOld, leftOld)
	for seed := range uint64(5) {
		mixed := func(by string) deriver {
			if slices.Index([]string{"n0", "n1", "n2", "n3", "n4", "n5"}, by)%2 == 0 {
				return deriveBefore43
			}
			return Derive
		}
		lost, left := churn(t, seed, false, mixed)
		t.Logf("seed %d, half old: %d ticks lost, %d departures", seed, lost, left)
		if lost > 2*left {
			t.Errorf("seed %d, half old: %d ticks lost for %d departures", seed, lost, left)
		}
	}
}

// TestKeep: RemoveJob's write leaves the job's state as it was, runs
// nothing however late it comes, and leaves the spreading lists alone,
// for this version's readers and the earlier version's (deriveBefore43).
func TestKeep(t *testing.T) {
	var s sim
	now := func(string) deriver { return Derive }
	s.tick(1, []string{"A", "B"}, now)
	for _, derive := range []deriver{Derive, deriveBefore43} {
		before := derive(s.data, s.mtime, 1<<32)
		keep := Keep(before, w, s.mtime, 1<<32)
		for _, at := range []int64{s.mtime + 10, s.mtime + 10*w} {
			after := derive(keep.Encode(), at, 1<<32)
			if after.Ran || after.At != before.At || after.By != before.By || after.Runs != before.Runs {
				t.Errorf("kept at %d: %+v, want the state before, %+v", at, after, before)
			}
			if fmt.Sprint(after.Recent) != fmt.Sprint(before.Recent) || !slices.Equal(slices.DeleteFunc(slices.Clone(after.Since), func(n string) bool { return n == "" }), before.Since) {
				t.Errorf("kept at %d: spreading %v %v, want %v %v", at, after.Recent, after.Since, before.Recent, before.Since)
			}
		}
	}
	if keep := Keep(Last{At: 1000}, w, 1200, 1<<32); keep.Verdict(1200+ServerSkew.Milliseconds()+10*w, 2) == Run {
		t.Error("a keeping write in another epoch ran")
	}
}

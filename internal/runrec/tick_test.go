package runrec

import "testing"

// TestNamedTicks: writes that claim named ticks after a named run are
// decided by the names alone: a later tick a window on runs whatever the
// server's clock says (here 2 s behind the names, then a new leader's),
// and so does an earlier one no run is within a window of (a tick an
// instance ahead of the others passed over); a tick run never runs again.
// The ticks run are kept, the latest run first, at most MaxRecent, and
// the largest let go is the floor: a tick not a window above it does not
// run (its run would not be known).
func TestNamedTicks(t *testing.T) {
	const tick = 1_000_000
	n := node{Record{Tick: tick, Window: w, By: "A"}, 998_000, 1} // a first run, the server 2 s behind
	last := Derive(n.rec.Encode(), n.mtime, n.epoch<<32)
	if !last.Ran || last.Tick != tick || len(last.Ticks) != 1 {
		t.Fatalf("a first named run: %+v", last)
	}
	claim := func(by string, tick, mtime, epoch int64) (Verdict, node) {
		l := Derive(n.rec.Encode(), n.mtime, n.epoch<<32)
		r := Record{Last: l.At, LastBy: l.By, Runs: l.Runs, Window: w, Prev: n.mtime, Epoch: n.epoch, By: by,
			Tick: tick, LastTick: l.Tick, Ticks: l.Ticks, Floor: l.Floor}
		return r.Verdict(mtime, epoch), node{r, mtime, epoch}
	}
	for _, c := range []struct {
		what        string
		tick, mtime int64
		epoch       int64
		want        Verdict
	}{
		{"the same tick, later by the server's clock", tick, 1_010_000, 1, Skip},
		{"an earlier tick no one ran", tick - 1000, 999_000, 1, Run},
		{"within a window before it", tick - w + 1, 999_000, 1, Skip},
		{"the next tick, the server's clock gone back", tick + 1000, 997_000, 1, Run},
		{"the next tick on a new leader", tick + 1000, 999_000, 2, Run},
		{"the same tick on a new leader", tick, 999_100, 2, Rebase},
		{"within the window", tick + w - 1, 999_500, 1, Skip},
	} {
		if v, _ := claim("B", c.tick, c.mtime, c.epoch); v != c.want {
			t.Errorf("%s: %v, want %v", c.what, v, c.want)
		}
	}
	for i := int64(1); i <= MaxRecent+2; i++ {
		v, next := claim("B", tick+i*1000, 999_000+i*1000, 1)
		if v != Run {
			t.Fatalf("tick %d: %v, want Run", i, v)
		}
		n = next
	}
	last = Derive(n.rec.Encode(), n.mtime, n.epoch<<32)
	if len(last.Ticks) != MaxRecent || last.Ticks[0] != tick+(MaxRecent+2)*1000 || !last.RanTick(tick+(MaxRecent+1)*1000, w) || last.RanTick(tick+(MaxRecent+1)*1000+w, w) {
		t.Errorf("the ticks kept: %v", last.Ticks)
	}
	if c := last.Runs; c != MaxRecent+3 {
		t.Errorf("%d runs counted, want %d", c, MaxRecent+3)
	}
	if last.Floor != tick+2000 {
		t.Errorf("the floor %d, want %d: the largest tick let go", last.Floor, tick+2000)
	}
	for _, old := range []int64{tick, tick + 1000, tick + 2000, tick + 2000 + w - 1} {
		if v, _ := claim("C", old, 1_020_000, 1); v != Skip {
			t.Errorf("a tick let go (%d), or not a window above the floor: %v, want Skip", old-tick, v)
		}
	}
}

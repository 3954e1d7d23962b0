package runrec

import "testing"

// TestNamedTicks (issue 56): writes that claim named ticks after a named
// run are decided by the names alone: a later tick a window on runs
// whatever the server's clock says (here 2 s behind the names, then a new
// leader's), the same or an earlier tick never runs, and the ticks run
// are kept, the latest first, so that a reader tells a tick run from one
// lost.
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
			Tick: tick, LastTick: l.Tick, Ticks: l.Ticks}
		return r.Verdict(mtime, epoch), node{r, mtime, epoch}
	}
	for _, c := range []struct {
		what        string
		tick, mtime int64
		epoch       int64
		want        Verdict
	}{
		{"the same tick, later by the server's clock", tick, 1_010_000, 1, Skip},
		{"an earlier tick", tick - 1000, 999_000, 1, Skip},
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
}

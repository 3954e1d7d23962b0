package runrec

import (
	"slices"
	"testing"
)

// TestUnnamedRunAhead: a run without a tick from a host whose clock reads
// 30 s ahead of the others' (a RunNow) closed every tick of the named
// instances for 30 s: its fire, by its host's clock, was the floor every
// tick had to clear. It is a run near a time: near its fire by its host's
// clock (the tick that host names so ran), and near when it ran by the
// named writer's clock (the server's date of that run set against the
// writer's own write's). The ticks after it run, once; the ones before
// it stay let go.
func TestUnnamedRunAhead(t *testing.T) {
	const (
		t0    = 1_000_000 // a 2-s job's ticks, by the named hosts' clocks (ms)
		srv   = -5000     // the server's clock less the named hosts'
		ahead = 29_200    // the clock of the host that runs without a tick, less the named hosts'
	)
	start := func(t *testing.T) *chain {
		t.Helper()
		var ch chain
		if v := ch.write(Record{Window: w, By: "A", Tick: t0, Fire: t0 + 2, Delay: 1}, t0+srv+5); v != Run {
			t.Fatalf("t0: %v", v)
		}
		// B runs without a tick 1 s after t0, by every clock but its own.
		if v := ch.write(Record{Window: w, By: "B", Fire: t0 + 1000 + ahead, Delay: 2}, t0+srv+1003); v != Run {
			t.Fatalf("B's run without a tick: %v", v)
		}
		return &ch
	}
	named := func(ch *chain, tick, late int64) Verdict {
		return ch.write(Record{Window: w, By: "A", Tick: tick, Fire: tick + late, Delay: 1}, tick+late+srv+3)
	}
	t.Run("ticks after it run", func(t *testing.T) {
		ch := start(t)
		for k := int64(1); k <= 20; k++ {
			tick := t0 + 2000*k
			v := named(ch, tick, 2)
			switch {
			case k == 15 && v == Run:
				t.Errorf("t15, within a window of B's fire by B's clock: run, a tick B named run twice")
			case k != 15 && v != Run:
				t.Errorf("t%d: %v, want Run", k, v)
			}
		}
	})
	t.Run("the names it leaves", func(t *testing.T) {
		ch := start(t)
		if v := named(ch, t0+2000, 2); v != Run {
			t.Fatalf("t1: %v", v)
		}
		l := Derive(ch.data, ch.mtime, ch.epoch<<32)
		if !slices.Equal(l.Ticks, []int64{t0 + 1000 + ahead, t0 + 2000, t0}) || l.Floor < t0+990 || l.Floor > t0+1010 {
			t.Errorf("after t1: ticks %v floor %d, want B's fire kept as a tick run and the floor at when B ran, about %d", l.Ticks, l.Floor, t0+1000)
		}
		// t0's replay and a late fire of a tick before B's run stay closed.
		if v := named(ch, t0, 1500); v == Run {
			t.Errorf("t0 fired 1.5 s late: run twice")
		}
		if v := named(ch, t0+1000, 2500); v == Run {
			t.Errorf("a tick at B's run, fired 2.5 s late: run, where B's run may have been its run")
		}
	})
	t.Run("near when it ran", func(t *testing.T) {
		var ch chain
		if v := ch.write(Record{Window: w, By: "A", Tick: t0, Fire: t0 + 2, Delay: 1}, t0+srv+5); v != Run {
			t.Fatalf("t0: %v", v)
		}
		// B runs 40 ms before t1, by the named hosts' clocks.
		if v := ch.write(Record{Window: w, By: "B", Fire: t0 + 960 + ahead, Delay: 2}, t0+srv+963); v != Run {
			t.Fatalf("B's run without a tick: %v", v)
		}
		rec := Record{Window: w, By: "A", Tick: t0 + 1000, Fire: t0 + 1005, Delay: 1}
		l := Derive(ch.data, ch.mtime, ch.epoch<<32)
		rec.Last, rec.LastBy, rec.Runs, rec.LastTick, rec.Ticks, rec.Floor, rec.Prev, rec.Epoch = l.At, l.By, l.Runs, l.Tick, l.Ticks, l.Floor, ch.mtime, ch.epoch
		if !l.MayOpen(rec.Tick, w, rec.Fire) {
			t.Fatalf("t1 may not open: the write must decide")
		}
		if v := rec.Verdict(t0+srv+1008, 1); v == Run {
			t.Errorf("t1, 40 ms after B's run: %v, a tick run twice", v)
		}
		if !rec.RanNear(t0+srv+1008, 1) {
			t.Errorf("t1's skip does not say B's run was its run")
		}
		if v := rec.Verdict(t0+srv+1008, 2); v == Run {
			t.Errorf("t1 in another leader's epoch: %v, the floor must stand", v)
		}
	})
	t.Run("in step", func(t *testing.T) {
		var ch chain
		if v := ch.write(Record{Window: w, By: "A", Tick: t0, Fire: t0 + 2, Delay: 1}, t0+srv+5); v != Run {
			t.Fatalf("t0: %v", v)
		}
		if v := ch.write(Record{Window: w, By: "B", Fire: t0 + 1300, Delay: 2}, t0+srv+1303); v != Run {
			t.Fatalf("B's run without a tick: %v", v)
		}
		// A late fire of t1, before B's run by every clock: let go.
		if v := named(&ch, t0+1000, 400); v == Run {
			t.Errorf("t1 fired 400 ms late, after a run without a tick in step: %v, want the floor", v)
		}
		if v := named(&ch, t0+2000, 2); v != Run {
			t.Errorf("t2: %v, want Run", v)
		}
	})
}

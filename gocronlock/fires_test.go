package gocronlock

import (
	"testing"
	"time"
)

// TestTickBookNames plays, Lock by Lock, what gocron v2.21.2 lists of a
// job (its nextScheduled, then the times NextRuns computes) in each mode,
// and checks the tick each Lock is named by: no two Locks named alike, no
// fire whose time gocron dropped taken for a RunNow.
func TestTickBookNames(t *testing.T) {
	const p = 2 * time.Second
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	list := func(ds ...time.Duration) []time.Time {
		var out []time.Time
		for _, d := range ds {
			out = append(out, at(d))
		}
		for len(out) > 0 && len(out) < readAhead {
			out = append(out, out[len(out)-1].Add(p))
		}
		return out
	}
	type lock struct {
		now   time.Duration
		times []time.Time
		tick  time.Duration // -1: none
		kind  fireKind
	}
	none := time.Duration(-1)
	for _, tc := range []struct {
		name  string
		locks []lock
	}{
		{"default mode, on time", []lock{
			{10 * time.Millisecond, list(0), 0, fireNamed},
			{p + 10*time.Millisecond, list(p), p, fireNamed},
			{2*p + 10*time.Millisecond, list(p, 2*p), 2 * p, fireNamed}, // T+P's completion not processed yet
		}},
		{"a RunNow between ticks", []lock{
			{10 * time.Millisecond, list(0), 0, fireNamed},
			{time.Second, list(p), none, fireRunNow},
			{p + 10*time.Millisecond, list(p), p, fireNamed},
		}},
		{"wait limit: fires queued, their times dropped", []lock{
			{10 * time.Millisecond, list(0), 0, fireNamed},
			{5700 * time.Millisecond, list(p, 2*p, 3*p), p, fireNamed}, // the slot frees: the first queued fire
			{5710 * time.Millisecond, list(3 * p), 2 * p, fireDropped}, // the next: its time dropped
			{3*p + 10*time.Millisecond, list(3 * p), 3 * p, fireNamed},
		}},
		{"wait limit: a RunNow queued among the fires", []lock{
			{10 * time.Millisecond, list(0), 0, fireNamed},
			{5700 * time.Millisecond, list(p, 2*p, 3*p), p, fireNamed},
			{5710 * time.Millisecond, list(3 * p), 2 * p, fireDropped}, // the RunNow takes 2p's name
			{5720 * time.Millisecond, list(3 * p), none, fireUnnamed},  // 2p's fire: not a RunNow
			{3*p + 10*time.Millisecond, list(3 * p), 3 * p, fireNamed},
			{3*p + time.Second, list(4 * p), none, fireRunNow},
		}},
		{"default mode, a completion processed after the next fire", []lock{
			{10 * time.Millisecond, list(0), 0, fireNamed},
			{p + 700*time.Millisecond, nil, p, fireDropped},
			{2*p + 10*time.Millisecond, list(2 * p), 2 * p, fireNamed},
		}},
		{"a fire whose time gocron dropped, its Lock after the next fire's time", []lock{
			{10 * time.Millisecond, list(0), 0, fireNamed},
			{5700 * time.Millisecond, list(p, 2*p, 3*p), p, fireNamed},
			{6100 * time.Millisecond, list(3*p, 4*p), 3 * p, fireNamed}, // 2p's fire, named 3p; 2p let go
			{6110 * time.Millisecond, list(4 * p), none, fireUnnamed},   // 3p's fire
			{4*p + 10*time.Millisecond, list(4 * p), 4 * p, fireNamed},
		}},
		{"a Lock more than a period late, default mode", []lock{
			{p + 100*time.Millisecond, list(0), 0, fireNamed}, // p is computed, never fires
			{2*p + 10*time.Millisecond, list(2 * p), 2 * p, fireNamed},
			{3*p + 10*time.Millisecond, list(3 * p), 3 * p, fireNamed},
		}},
		{"an empty list, nothing seen", []lock{
			{10 * time.Millisecond, nil, none, fireUnnamed},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b tickBook
			named := map[time.Time]int{}
			for i, l := range tc.locks {
				tick, kind := b.name(l.times, at(l.now))
				want := time.Time{}
				if l.tick != none {
					want = at(l.tick)
				}
				if !tick.Equal(want) || kind != l.kind {
					t.Errorf("Lock %d at +%v: tick %v, kind %d; want %v, %d", i, l.now, tick.Sub(t0), kind, l.tick, l.kind)
				}
				if !tick.IsZero() {
					if named[tick]++; named[tick] > 1 {
						t.Errorf("Lock %d: tick +%v named twice", i, tick.Sub(t0))
					}
				}
			}
		})
	}
}

// nextRuns plays gocron's Job.NextRuns over list: its times, then every
// period after the last.
type nextRuns struct {
	list   []time.Time
	period time.Duration
}

func (n nextRuns) NextRuns(count int) ([]time.Time, error) {
	if len(n.list) == 0 {
		return nil, nil
	}
	out := append([]time.Time(nil), n.list[:min(count, len(n.list))]...)
	for len(out) < count {
		out = append(out, out[len(out)-1].Add(n.period))
	}
	return out, nil
}

// TestLongQueueNamed: 40 fires of a job queued behind a long job, more
// than a first read holds: the first Lock reads them all, and each queued
// fire is named by its own time, none taken for a RunNow, after gocron
// dropped them.
func TestLongQueueNamed(t *testing.T) {
	const p = time.Second
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	var queued []time.Time
	for i := range 41 {
		queued = append(queued, t0.Add(time.Duration(i)*p))
	}
	now := t0.Add(40*p + 500*time.Millisecond) // the slot frees
	future := []time.Time{t0.Add(41 * p)}
	var b tickBook
	times, err := readTimes(nextRuns{list: append(queued, future...), period: p}, now)
	if err != nil || len(times) < 42 {
		t.Fatalf("read %d times (%v), want the 41 queued and the next", len(times), err)
	}
	for i := range 41 {
		if i > 0 {
			times, _ = readTimes(nextRuns{list: future, period: p}, now) // gocron dropped the rest
		}
		tick, kind := b.name(times, now)
		if !tick.Equal(queued[i]) || kind == fireRunNow || kind == fireUnnamed {
			t.Fatalf("queued fire %d: tick %v, kind %d; want %v", i, tick, kind, queued[i])
		}
	}
	if tick, kind := b.name(future, now.Add(10*time.Millisecond)); kind != fireUnnamed {
		t.Errorf("a Lock after the queue, in its backlog: tick %v, kind %d; want it not run", tick, kind)
	}
}

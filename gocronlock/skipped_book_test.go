package gocronlock

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTickBookSkipped plays, Lock by Lock, what gocron v2.21.2 lists of a
// job, and checks the ticks each Lock finds passed over (fired by no Lock
// here, and by none to come): those of a late scheduler, which skips the
// times already past when it reschedules; none of fires queued and named
// by their dropped times; none of a schedule that moved (a job scheduled
// from its completion); and, past what the book reads ahead, those it
// read, said to be fewer than gocron passed over.
func TestTickBookSkipped(t *testing.T) {
	const p = time.Second
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	list := func(ds ...time.Duration) []time.Time {
		times, _ := readTimes(nextRuns{list: func() (out []time.Time) {
			for _, d := range ds {
				out = append(out, at(d))
			}
			return out
		}(), period: p}, time.Time{})
		return times
	}
	type lock struct {
		now     time.Duration
		times   []time.Time
		skipped []time.Duration
	}
	upTo := func(n int) (out []time.Duration) {
		for i := 1; i <= n; i++ {
			out = append(out, time.Duration(i)*p)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		locks  []lock
		unread bool
	}{
		{"on time", []lock{{10 * time.Millisecond, list(0), nil}, {p + 10*time.Millisecond, list(p), nil}, {2*p + 10*time.Millisecond, list(2 * p), nil}}, false},
		{"default mode, a Lock slower than two periods", []lock{
			{10 * time.Millisecond, list(0), nil},
			{3*p + 10*time.Millisecond, list(3 * p), []time.Duration{p, 2 * p}},
			{4*p + 10*time.Millisecond, list(4 * p), nil},
		}, false},
		{"a Lock more than a period late, its computed next time passed", []lock{
			{p + 100*time.Millisecond, list(0), nil},
			{2*p + 10*time.Millisecond, list(2 * p), []time.Duration{p}},
		}, false},
		{"wait limit: fires queued, named by their dropped times", []lock{
			{10 * time.Millisecond, list(0), nil},
			{2*p + 850*time.Millisecond, list(p, 2*p, 3*p), nil}, // the slot frees
			{2*p + 860*time.Millisecond, list(3 * p), nil},
			{3*p + 10*time.Millisecond, list(3 * p), nil},
		}, false},
		{"a schedule from the completion: the times ahead moved", []lock{
			{10 * time.Millisecond, list(0), nil},
			{p + 500*time.Millisecond, list(p + 400*time.Millisecond), nil},
		}, false},
		{"starved past what the book reads ahead", []lock{
			{10 * time.Millisecond, list(0), nil},
			{20*p + 10*time.Millisecond, list(20 * p), upTo(readAhead - 1)},
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b tickBook
			for i, l := range tc.locks {
				b.name(l.times, at(l.now))
				var want []time.Time
				for _, d := range l.skipped {
					want = append(want, at(d))
				}
				if got := b.skipped.ticks; !slices.EqualFunc(got, want, time.Time.Equal) {
					t.Errorf("Lock %d at +%v: passed over %v, want %v", i, l.now, got, want)
				}
				if len(want) > 0 && !strings.Contains(b.skipped.why, "its scheduler was late") {
					t.Errorf("Lock %d: why %q", i, b.skipped.why)
				}
				if unread := strings.Contains(b.skipped.why, "more ticks passed over"); len(want) > 0 && unread != tc.unread {
					t.Errorf("Lock %d: why %q; said that more were passed over than read: %t, want %t", i, b.skipped.why, unread, tc.unread)
				}
			}
		})
	}
}

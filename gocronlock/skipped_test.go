package gocronlock_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestSkippedTicksToldLost plays gocron v2.21.2's default mode on a late
// scheduler, deterministically: a runs tick T, and its Lock returns after
// T+P and T+2P came, so that gocron reschedules the job from T, skips the
// times already past and fires T+3P next: no Lock of T+P or T+2P on a. b
// ran T+P on time; T+2P ran nowhere. a's Lock of T+3P finds the two ticks
// its gocron passed over; the record decides them: T+2P told lost, once,
// to the observer (outcome lost, the tick named) and in a line naming the
// job, the tick and why; T+P, which b ran, not told. On the code before,
// a's Locker said nothing of either (no event of T+P or T+2P, no line).
func TestSkippedTicksToldLost(t *testing.T) {
	const period = 300 * time.Millisecond
	root := zktest.Path(t)
	opts := []runonce.Option{runonce.WithWindow(100 * time.Millisecond), runonce.WithLockTimeout(200 * time.Millisecond)}
	var seen events
	s, logs := logged(t, zktest.Servers(t))
	a, err := gocronlock.NewLocker(s, root, append(opts, runonce.WithInstanceName("a"), runonce.WithObserver(seen.observe))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, _ := newLocker(t, root, append(opts, runonce.WithInstanceName("b"))...)
	aJob := &listJob{name: "report", id: uuid.New(), period: period}
	a.Attach(&listSched{job: aJob})
	bJob := &listJob{name: "report", id: uuid.New(), period: period}
	b.Attach(&listSched{job: bJob})
	ctx := zktest.Context(t, 20*time.Second)
	tick := time.Now().Truncate(time.Second).Add(time.Second)
	at := func(i int) time.Time { return tick.Add(time.Duration(i) * period) }

	fire := func(l *gocronlock.Locker, j *listJob, i int, late time.Duration, list ...time.Time) {
		t.Helper()
		time.Sleep(time.Until(at(i).Add(late)))
		j.set(list...)
		if ran, err := runOnce(ctx, l, "report", nil); !ran {
			t.Fatalf("fire of T+%dP: %v", i, err)
		}
	}
	fire(a, aJob, 0, 0, at(0))
	fire(b, bJob, 1, 0, at(1))
	// T+2P's window and the lock timeout past when a's gocron fires T+3P.
	fire(a, aJob, 3, 50*time.Millisecond, at(3))

	var lost []time.Time
	for _, e := range seen.since(0) {
		if (e.Tick.Equal(at(1)) || e.Tick.Equal(at(2))) && e.Outcome.String() != "lost" {
			t.Errorf("a's event of a tick its gocron passed over: %s, %v", e.Outcome, e.Err)
		}
		if e.Outcome.String() == "lost" {
			lost = append(lost, e.Tick)
		}
	}
	if len(lost) != 1 || !lost[0].Equal(at(2)) {
		t.Errorf("a told lost %v, want T+2P (%v) only: T+P ran on b; events %+v", lost, at(2), seen.since(0))
	}
	out := logs.String()
	if n := strings.Count(out, "gocron on this instance did not fire them"); n != 1 || !strings.Contains(out, "job=report") {
		t.Errorf("%d lines telling the ticks a's gocron did not fire, want 1 naming the job:\n%s", n, out)
	}
	fire(a, aJob, 4, 0, at(4))
	if n := strings.Count(logs.String(), "gocron on this instance did not fire them"); n != 1 {
		t.Errorf("after a's next Lock, %d lines telling skipped ticks, want the one: told once", n)
	}
}

// TestUnknownTickToldLost: a's fire of T comes 600 ms late, and the job
// has no run node yet (its first ticks failed under a load, say): the
// record cannot tell, and a's Lock is refused, told unknown. T ran
// nowhere; once the record exists (a runs T+P) and T's window and the
// lock timeout passed, a's next Lock tells T lost. On the code before,
// unknown was all a ever said of T.
func TestUnknownTickToldLost(t *testing.T) {
	const period = time.Second
	var seen events
	a, _ := newLocker(t, zktest.Path(t), runonce.WithWindow(100*time.Millisecond), runonce.WithLockTimeout(200*time.Millisecond),
		runonce.WithObserver(seen.observe))
	job := &listJob{name: "report", id: uuid.New(), period: period}
	a.Attach(&listSched{job: job})
	ctx := zktest.Context(t, 20*time.Second)
	tick := time.Now().Truncate(time.Second).Add(time.Second)
	at := func(i int) time.Time { return tick.Add(time.Duration(i) * period) }

	time.Sleep(time.Until(at(0).Add(600 * time.Millisecond)))
	job.set(at(0))
	if ran, err := runOnce(ctx, a, "report", nil); ran || !errors.Is(err, runonce.ErrTickUnknown) {
		t.Fatalf("a's fire of T, 600 ms late, no run node: ran %t, %v; want unknown", ran, err)
	}
	for i := 1; i <= 2; i++ {
		time.Sleep(time.Until(at(i)))
		job.set(at(i))
		if ran, err := runOnce(ctx, a, "report", nil); !ran {
			t.Fatalf("a's fire of T+%dP, on time: %v", i, err)
		}
	}
	var told []string
	for _, e := range seen.since(0) {
		if e.Tick.Equal(at(0)) {
			told = append(told, e.Outcome.String())
		}
	}
	if !slices.Contains(told, "lost") {
		t.Errorf("a's events of T, which ran nowhere: %v, want lost once the record could say", told)
	}
}

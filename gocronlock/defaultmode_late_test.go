package gocronlock_test

import (
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/jonboulle/clockwork"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// lateCompletionClock is the real clock, but for one reading: once armed,
// the first time gocron's scheduler goroutine reads it while handling a
// run's completion (gocron v2.21.2's selectExecJobsOutCompleted), the
// reading waits until the test lets it go. It plays a loaded instance
// whose scheduler goroutine gets the CPU late: gocron's executor handed
// the completion over (an unbuffered send, taken), and the goroutine then
// reads the time, and drops every scheduled time at or before it, only
// after the job's next fire. Meanwhile that fire's executor goroutine asks
// the scheduler goroutine for the job, and waits, as a starved one would.
type lateCompletionClock struct {
	clockwork.Clock
	hold atomic.Pointer[chan struct{}] // armed: the completion's reading waits for it to close
	held atomic.Bool                   // a completion's reading waited
}

// arm makes the next completion's reading of the clock wait until the
// returned function is called.
func (c *lateCompletionClock) arm() (let func()) {
	ch := make(chan struct{})
	c.hold.Store(&ch)
	return func() { close(ch) }
}

func (c *lateCompletionClock) Now() time.Time {
	if ch := c.hold.Load(); ch != nil && calledFrom(".(*scheduler).selectExecJobsOutCompleted") {
		if c.hold.CompareAndSwap(ch, nil) {
			c.held.Store(true)
			<-*ch
		}
	}
	return c.Clock.Now()
}

// calledFrom reports whether a function whose name ends in suffix is on
// the calling goroutine's stack.
func calledFrom(suffix string) bool {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, suffix) {
			return true
		}
		if !more {
			return false
		}
	}
}

// TestDefaultModeLateCompletionRunsOnce is item one's path in gocron's
// default mode (no concurrency limit), on real gocron schedulers: two
// instances made with Locker.NewScheduler, a job every second. Instance a
// runs tick T; gocron's executor reschedules the job (T+P appended) and
// hands the run's completion to the scheduler goroutine, which, loaded
// (lateCompletionClock), reads the time only once b ran T+P. It then drops
// T and T+P, both past; a's fire of T+P, which waited for the scheduler
// goroutine meanwhile, finds no scheduled time at its Lock. That fire is
// not a RunNow: the Locker names it T+P, what it saw coming at T's Lock,
// and does not run it: b ran it. Before the Locker named such fires
// (8cd28ba^) it claimed the fire by the server's clock and ran T+P a
// second time, 3 of 3.
func TestDefaultModeLateCompletionRunsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("a scene of 5 s: -short")
	}
	const period = time.Second
	root := zktest.Path(t)
	var seen, seenB events
	var logs zktest.SyncBuffer // a's, Debug and above: the line that names a fire by a dropped time
	sa := zktest.Connect(t, zktest.Servers(t),
		zklock.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	a, err := gocronlock.NewLocker(sa, root, runonce.WithInstanceName("a"), runonce.WithObserver(seen.observe))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _ := newLocker(t, root, runonce.WithInstanceName("b"), runonce.WithObserver(seenB.observe))
	first := time.Now().Truncate(time.Second).Add(2 * time.Second)
	tr := newTickRuns(first, period)
	clock := &lateCompletionClock{Clock: clockwork.NewRealClock()}
	// b starts at T+P: a alone runs T, and b's first fire is T+P, on time.
	sa2 := tr.scheduler(t, a, "a", first, gocron.WithClock(clock))
	let := clock.arm()
	sa2.Start()
	defer func() { _ = sa2.Shutdown() }()
	next := first.Add(period)
	time.Sleep(time.Until(next.Add(-300 * time.Millisecond)))
	sb := tr.scheduler(t, b, "b", next)
	sb.Start()
	defer func() { _ = sb.Shutdown() }()

	// The completion of a's run of T waits until b ran T+P.
	deadline := time.After(time.Until(next.Add(5 * time.Second)))
	for !ranTick(seenB.since(0), next) {
		select {
		case <-deadline:
			let()
			t.Fatalf("b never ran T+P (+1s): %+v", seenB.since(0))
		case <-time.After(5 * time.Millisecond):
		}
	}
	if !clock.held.Load() {
		let()
		t.Fatal("a's run of T ended and no completion read the scene's clock: gocron's completion handling is not selectExecJobsOutCompleted?")
	}
	// A loaded scheduler goroutine late by most of a period: a's fire of
	// T+P, which waited for it, comes 700 ms after its time.
	time.Sleep(time.Until(next.Add(700 * time.Millisecond)))
	let()
	time.Sleep(time.Until(next.Add(period + 500*time.Millisecond))) // a's late fire of T+P decided, T+2P run
	if err := sa2.Shutdown(); err != nil {
		t.Error(err)
	}
	if err := sb.Shutdown(); err != nil {
		t.Error(err)
	}

	if twice, n := tr.doubles(); len(twice) > 0 {
		t.Errorf("%d ticks ran twice (%d runs): %s\ninstance a's log:\n%s", len(twice), n, strings.Join(twice, "; "), logs.String())
	}
	// a's fire of T+P reached its Lock, was named T+P by the time gocron
	// dropped, and was not run: b ran it (already ran, or stale if a's
	// fire came past the window).
	var late []runonce.Event
	for _, e := range seen.since(0) {
		if e.Job == "tick" && (e.Tick.Equal(next) || e.Tick.IsZero()) {
			late = append(late, e)
		}
	}
	if len(late) != 1 || !late[0].Tick.Equal(next) ||
		!errors.Is(late[0].Err, runonce.ErrAlreadyRan) && !errors.Is(late[0].Err, runonce.ErrStale) {
		t.Errorf("a's fire of T+P after its time was dropped: %+v; want one event, already ran or stale, named T+P (%s)\ninstance a's log:\n%s",
			late, next.Format("15:04:05.000"), logs.String())
	}
	if !strings.Contains(logs.String(), "a fire whose scheduled time gocron dropped") {
		t.Errorf("a's log does not say its fire of T+P was named by a time gocron dropped:\n%s", logs.String())
	}
	t.Logf("runs: %s", tr)
}

// ranTick reports whether evs hold a run of tick.
func ranTick(evs []runonce.Event, tick time.Time) bool {
	for _, e := range evs {
		if e.Outcome == runonce.Ran && e.Tick.Equal(tick) {
			return true
		}
	}
	return false
}

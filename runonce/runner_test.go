package runonce_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// TestDoOncePerTick is the shape of go-co-op/gocron#841, on the primitive:
// three instances whose timers fire 0, 300 and 600 ms into each tick, a
// job of 5 ms, each run released before the next instance tries. A lock
// alone runs each tick three times; Do runs it once, on the first
// instance, and the others are told why not (ErrAlreadyRan).
//
// The margins, kept on a loaded machine (a make test with a busy core
// beside it once delayed the first instance's write 152 ms, past the
// second's timer, and a claim past the 1-s default lock timeout): timers
// 300 ms apart, within a window of 1 s, ticks 2 s apart (beyond it), a
// lock timeout of 5 s, and the run's time within the window of its tick.
func TestDoOncePerTick(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ticks of three instances, about 5 s")
	}
	root := zktest.Path(t)
	const window, period = time.Second, 2 * time.Second
	offsets := []time.Duration{0, 300 * time.Millisecond, 600 * time.Millisecond}
	rs := make([]*runonce.Runner, len(offsets))
	for i := range rs {
		rs[i], _ = newRunner(t, root, runonce.WithInstanceName(fmt.Sprint("node-", i)),
			runonce.WithWindow(window), runonce.WithLockTimeout(5*time.Second))
	}
	ctx := zktest.Context(t, 60*time.Second)
	start := time.Now().Truncate(time.Second).Add(time.Second)
	for tick := range 3 {
		at := start.Add(time.Duration(tick) * period)
		ran := make([]bool, len(offsets))
		errs := make([]error, len(offsets))
		var wg sync.WaitGroup
		for i, off := range offsets {
			wg.Go(func() {
				time.Sleep(time.Until(at.Add(off)))
				errs[i] = rs[i].Do(ctx, "report", func(context.Context) error {
					ran[i] = true
					time.Sleep(5 * time.Millisecond)
					return nil
				})
			})
		}
		zktest.Wait(t, "the instances", &wg)
		checkFirstRan(t, tick, ran, errs)
		last, err := rs[2].LastRun(ctx, "report")
		if err != nil {
			t.Fatal(err)
		}
		// The server is on this machine: its clock is ours.
		if d := last.At.Sub(at); d < -50*time.Millisecond || d >= window || last.By != "node-0" || last.Runs != int64(tick+1) {
			t.Errorf("tick %d: last run %+v, %v after the tick; want within the window, by node-0, %d runs", tick, last, d, tick+1)
		}
	}
}

// checkFirstRan holds a tick's attempts to one run, the first instance's,
// and ErrAlreadyRan for the others.
func checkFirstRan(t *testing.T, tick int, ran []bool, errs []error) {
	t.Helper()
	if !ran[0] || ran[1] || ran[2] || errs[0] != nil {
		t.Fatalf("tick %d: ran %v (errors %v), want only the first instance", tick, ran, errs)
	}
	for i := 1; i < len(ran); i++ {
		if !errors.Is(errs[i], runonce.ErrAlreadyRan) || !errors.Is(errs[i], runonce.ErrSkipped) {
			t.Errorf("tick %d, instance %d: %v, want ErrAlreadyRan", tick, i, errs[i])
		}
	}
}

// TestClaimHeldSkips: a tick due while the job's lock is held, by a run
// of an earlier tick still going on another instance, is skipped at once
// (ErrLockHeld), not queued.
func TestClaimHeldSkips(t *testing.T) {
	root := zktest.Path(t)
	const window = 200 * time.Millisecond
	a, _ := newRunner(t, root, runonce.WithWindow(window))
	b, _ := newRunner(t, root, runonce.WithWindow(window))
	ctx := zktest.Context(t, 20*time.Second)
	held, err := a.Claim(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(window + 20*time.Millisecond)
	begin := time.Now()
	if _, err := b.Claim(ctx, "job"); !errors.Is(err, runonce.ErrLockHeld) {
		t.Fatalf("Claim of the next tick while a's run goes on: %v, want ErrLockHeld", err)
	}
	if d := time.Since(begin); d > 500*time.Millisecond {
		t.Errorf("a skip took %v: it must not wait", d)
	}
	if _, err := a.Claim(ctx, "job"); !errors.Is(err, runonce.ErrLockHeld) {
		t.Errorf("a second Claim of one instance during its run: %v, want ErrLockHeld", err)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if err := held.Release(); !errors.Is(err, zklock.ErrNotHeld) {
		t.Errorf("second Release: %v, want zklock.ErrNotHeld", err)
	}
}

// TestDoReturnsAndReleases: Do returns fn's error, releases the claim
// when fn returns or panics, and does not call fn on a skip.
func TestDoReturnsAndReleases(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out its window, about 2 s")
	}
	// The second Do must fall in the first one's tick: within a window of
	// it on the server's clock. 50 ms was not enough on a loaded machine
	// (CI: the second write counted as the next tick's, answered too late
	// to confirm it, ErrSlowWrite).
	const window = time.Second
	r, _ := newRunner(t, zktest.Path(t), runonce.WithWindow(window))
	ctx := zktest.Context(t, 20*time.Second)
	boom := errors.New("the job failed")
	if err := r.Do(ctx, "job", func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Do: %v, want fn's error", err)
	}
	called := false
	if err := r.Do(ctx, "job", func(context.Context) error { called = true; return nil }); !errors.Is(err, runonce.ErrAlreadyRan) || called {
		t.Fatalf("Do in the same tick: %v (fn called: %v), want ErrAlreadyRan and no call", err, called)
	}
	time.Sleep(window + 20*time.Millisecond)
	func() {
		defer func() { _ = recover() }()
		_ = r.Do(ctx, "job", func(context.Context) error { panic("the job panicked") })
	}()
	time.Sleep(window + 20*time.Millisecond)
	if err := r.Do(ctx, "job", func(context.Context) error { return nil }); err != nil {
		t.Fatalf("Do after a run that panicked: %v, want a run (its claim released)", err)
	}
}

// TestClaimContext: the run's context ends at Release, and with a cause
// matching ErrClosed when Close releases the run; RunContext finds it by
// key while it lasts.
func TestClaimContext(t *testing.T) {
	r, _ := newRunner(t, zktest.Path(t), runonce.WithWindow(time.Millisecond))
	ctx := zktest.Context(t, 20*time.Second)
	c, err := r.Claim(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if r.RunContext("job") != c.Context() || c.Context().Err() != nil {
		t.Fatal("RunContext during the run is not the claim's live context")
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	if c.Context().Err() == nil {
		t.Error("the run's context lives on after Release")
	}
	if cause := context.Cause(r.RunContext("job")); !errors.Is(cause, zklock.ErrNotHeld) {
		t.Errorf("RunContext with no run: cause %v, want zklock.ErrNotHeld", cause)
	}
	time.Sleep(20 * time.Millisecond)
	c, err = r.Claim(ctx, "job")
	for deadline := time.Now().Add(2 * time.Second); errors.Is(err, runonce.ErrLockHeld) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // the last release's delete leaves within a moment
		c, err = r.Claim(ctx, "job")
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if cause := context.Cause(c.Context()); !errors.Is(cause, runonce.ErrClosed) {
		t.Errorf("the run's context after Close: cause %v, want ErrClosed", cause)
	}
	if err := c.Release(); !errors.Is(err, runonce.ErrClosed) {
		t.Errorf("Release after Close: %v, want ErrClosed", err)
	}
	if _, err := r.Claim(ctx, "job"); !errors.Is(err, runonce.ErrClosed) {
		t.Errorf("Claim after Close: %v, want ErrClosed", err)
	}
}

// TestObserverEvents: the observer hears every Claim, with its outcome
// and latency, and what an adapter passes to Observe.
func TestObserverEvents(t *testing.T) {
	var mu sync.Mutex
	var events []runonce.Event
	r, _ := newRunner(t, zktest.Path(t), runonce.WithObserver(func(e runonce.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}))
	ctx := zktest.Context(t, 20*time.Second)
	_ = r.Do(ctx, "job", func(context.Context) error { return nil })
	_ = r.Do(ctx, "job", func(context.Context) error { return nil })
	refused := errors.New("refused by the adapter")
	r.Observe(runonce.Event{Job: "other", Outcome: runonce.Failed, Err: refused})
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 3 {
		t.Fatalf("%d events, want 3: %+v", len(events), events)
	}
	if e := events[0]; e.Job != "job" || e.Outcome != runonce.Ran || e.Err != nil || e.Latency <= 0 {
		t.Errorf("first event %+v, want job ran", e)
	}
	if e := events[1]; e.Outcome != runonce.SkippedRan || !errors.Is(e.Err, runonce.ErrAlreadyRan) || e.Outcome.String() != "already_ran" {
		t.Errorf("second event %+v, want already_ran", e)
	}
	if e := events[2]; e.Job != "other" || !errors.Is(e.Err, refused) {
		t.Errorf("observed event %+v, want the adapter's", e)
	}
}

// TestBoundaryHint: the warning that a job runs more than once per tick
// (timers further apart than the window) ends with the scheduler's way to
// a common boundary, as the adapter words it (WithBoundaryHint).
func TestBoundaryHint(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: eight ticks of a 300-ms job, about 2 s")
	}
	defer runonce.NeverOverloaded()()
	root := zktest.Path(t)
	s, logs := logged(t, zktest.Servers(t))
	const w, p = 60 * time.Millisecond, 300 * time.Millisecond
	offs := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}
	var rs []*runonce.Runner
	for i := range offs {
		sess := s
		if i > 0 {
			sess = zktest.Connect(t, zktest.Servers(t))
		}
		r, err := runonce.New(sess, root, runonce.WithWindow(w), runonce.WithInstanceName(fmt.Sprint("node-", i)),
			runonce.WithBoundaryHint("the scheduler's own way"))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		rs = append(rs, r)
	}
	ctx := zktest.Context(t, 30*time.Second)
	start := time.Now().Add(100 * time.Millisecond)
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() {
			for k := range 8 {
				time.Sleep(time.Until(start.Add(time.Duration(k)*p + offs[i])))
				_ = r.Do(ctx, "job", func(context.Context) error { time.Sleep(5 * time.Millisecond); return nil })
			}
		})
	}
	zktest.Wait(t, "the runners", &wg)
	const want = "the job runs more than once per tick: the fleet's timers for it are further apart than its window; "
	if out := logs.String(); !strings.Contains(out, want) || !strings.Contains(out, "start the job on a common boundary (the scheduler's own way)") ||
		!strings.Contains(out, "component=runonce") {
		t.Errorf("no %q with the hint and component=runonce in the logs:\n%s", want, out)
	}
}

// TestRemoveJobAndLastRun: LastRun tells the last run; RemoveJob deletes
// the job's nodes once the run is a window and a lock timeout old, after
// which the job never ran.
func TestRemoveJobAndLastRun(t *testing.T) {
	root := zktest.Path(t)
	r, s := newRunner(t, root, runonce.WithWindow(100*time.Millisecond), runonce.WithLockTimeout(300*time.Millisecond),
		runonce.WithInstanceName("me"))
	ctx := zktest.Context(t, 20*time.Second)
	if err := r.Do(ctx, "retired", func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	last, err := r.LastRun(ctx, "retired")
	if err != nil || last.By != "me" || last.Runs != 1 || last.Window != 100*time.Millisecond || time.Since(last.At) > time.Minute {
		t.Fatalf("LastRun: %+v, %v; want a run by me, 1 run, window 100ms", last, err)
	}
	if err := r.RemoveJob(ctx, "retired"); err != nil {
		t.Fatal(err)
	}
	if kids := zktest.Children(t, s.Conn(), root); len(kids) != 0 {
		t.Errorf("nodes left below the root: %v", kids)
	}
	if last, err := r.LastRun(ctx, "retired"); err != nil || !last.At.IsZero() {
		t.Errorf("LastRun after RemoveJob: %+v, %v; want the zero Run", last, err)
	}
}

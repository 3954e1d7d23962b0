package runonce_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// ticks plays n ticks of period p for the lockers, each offs[i] into the
// tick, each run lasting 5 ms.
func ticks(t *testing.T, ls []*runonce.Runner, offs []time.Duration, p time.Duration, n int, job string) {
	t.Helper()
	ticksSpread(t, ls, offs, p, n, job)
}

// ticksSpread plays ticks and returns the widest spread of one tick's
// attempts as the machine made them: from the first Claim's entry to the
// last, read on the test's clock before each Claim. The offsets ask for
// offs' spread; a busy machine that wakes a timer late widens it.
func ticksSpread(t *testing.T, ls []*runonce.Runner, offs []time.Duration, p time.Duration, n int, job string) time.Duration {
	t.Helper()
	ctx := zktest.Context(t, time.Duration(n+10)*p+20*time.Second)
	start := time.Now().Add(100 * time.Millisecond)
	entries := make([][]time.Time, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		entries[i] = make([]time.Time, n)
		wg.Go(func() {
			for k := range n {
				time.Sleep(time.Until(start.Add(time.Duration(k)*p + offs[i])))
				entries[i][k] = time.Now()
				_, _ = runOnce(ctx, l, job, func() { time.Sleep(5 * time.Millisecond) })
			}
		})
	}
	zktest.Wait(t, "the runners", &wg)
	var widest time.Duration
	for k := range n {
		first, last := entries[0][k], entries[0][k]
		for i := range ls {
			if e := entries[i][k]; e.Before(first) {
				first = e
			} else if e.After(last) {
				last = e
			}
		}
		widest = max(widest, last.Sub(first))
	}
	return widest
}

// TestOutsideEnvelopeWarned: what the run node shows of a fleet outside
// S < W <= P - S is said once per job: windows that differ, timers
// further apart than the window (a DurationJob without a start time: its
// ticks run more than once), a window longer than the period allows
// (ticks late or lost).
func TestOutsideEnvelopeWarned(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: fleets of timers against their windows, about 9 s")
	}
	defer runonce.NeverOverloaded()()
	servers := zktest.Servers(t)
	const p = 300 * time.Millisecond
	for _, c := range []struct {
		name    string
		windows []time.Duration
		offs    []time.Duration
		want    string
	}{
		{"windows differ", []time.Duration{100 * time.Millisecond, 250 * time.Millisecond}, []time.Duration{0, 50 * time.Millisecond}, "the fleet's windows differ"},
		{"timers too far apart", []time.Duration{60 * time.Millisecond, 60 * time.Millisecond, 60 * time.Millisecond},
			[]time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}, "the job runs more than once per tick"},
		{"window too long", []time.Duration{350 * time.Millisecond, 350 * time.Millisecond}, []time.Duration{0, 100 * time.Millisecond}, "ticks are late or lost"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := zktest.Path(t)
			s, logs := logged(t, servers)
			var ls []*runonce.Runner
			for i, w := range c.windows {
				sess := s
				if i > 0 {
					sess = zktest.Connect(t, servers)
				}
				l, err := runonce.New(sess, root, runonce.WithWindow(w), runonce.WithInstanceName(fmt.Sprint("node-", i)))
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				ls = append(ls, l)
			}
			ticks(t, ls, c.offs, p, 8, "job")
			if out := logs.String(); !strings.Contains(out, c.want) {
				t.Errorf("no %q in the first instance's logs:\n%s", c.want, out)
			}
		})
	}
	// And a healthy fleet hears none of it.
	t.Run("healthy", func(t *testing.T) {
		root := zktest.Path(t)
		s, logs := logged(t, servers)
		var ls []*runonce.Runner
		for i := range 3 {
			sess := s
			if i > 0 {
				sess = zktest.Connect(t, servers)
			}
			l, err := runonce.New(sess, root, runonce.WithWindow(150*time.Millisecond), runonce.WithInstanceName(fmt.Sprint("node-", i)))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ls = append(ls, l)
		}
		spread := ticksSpread(t, ls, []time.Duration{0, 40 * time.Millisecond, 80 * time.Millisecond}, p, 8, "job")
		// Judged: the Runner's own warnings and errors. The session's
		// lines (a connection dropped and made again, as a loaded CI run
		// once had before the first session) tell the connection, not the
		// envelope: shown, not judged.
		out := logs.String()
		if warned := runonceLines(out); len(warned) > 0 {
			out = strings.Join(warned, "\n")
			// The fleet is healthy only while a tick's attempts come
			// within its 150-ms window of each other: the timers ask for
			// 80 ms, and a machine that woke one of them 70 ms late or
			// more made a fleet outside the envelope, which the code
			// rightly tells (20 ms kept for the server's clock against
			// the test's). Judged only when the machine gave that margin.
			if spread >= 150*time.Millisecond-20*time.Millisecond && !strings.Contains(out, "windows differ") {
				t.Skipf("the machine spread a tick's attempts over %v (asked: 80 ms, the window 150 ms): not a healthy fleet; the scene needs timers woken within about 50 ms; warned:\n%s",
					spread.Round(time.Millisecond), out)
			}
			t.Errorf("a healthy fleet was warned, a tick's attempts spread over %v at most:\n%s", spread.Round(time.Millisecond), out)
		} else if strings.Contains(out, "level=WARN") || strings.Contains(out, "level=ERROR") {
			t.Logf("the session's own lines (not the Runner's):\n%s", out)
		}
	})
}

// TestObserverAndLastRun: the observer hears every Lock with its outcome
// and latency, and LastRun names the instance that ran, with the count of
// runs.
func TestObserverAndLastRun(t *testing.T) {
	root := zktest.Path(t)
	const w = 200 * time.Millisecond
	var mu sync.Mutex
	var events []runonce.Event
	observe := runonce.WithObserver(func(e runonce.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})
	a, _ := newRunner(t, root, runonce.WithWindow(w), runonce.WithInstanceName("a"), observe)
	b, _ := newRunner(t, root, runonce.WithWindow(w), runonce.WithInstanceName("b"), observe)
	ctx := zktest.Context(t, 20*time.Second)
	held, err := a.Claim(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	aRan := time.Now() // a's run was written before this
	_, errHeld := b.Claim(ctx, "job")
	_ = held.Release()
	time.Sleep(20 * time.Millisecond)
	bAfter := time.Since(aRan) // at least how long after a's run b's claim starts
	_, errRan := b.Claim(ctx, "job")
	// b's claim is a's tick only within the window of a's run: the
	// scene asks for about 20 ms. Started a window after it or later, it
	// is a tick of its own by the rule, which runs it: not the scene. A
	// run of b's that started within the window still fails it: a double.
	if errRan == nil && bAfter >= w {
		t.Skipf("b's claim started %v after a's run, past the window (%v): the machine's delay made it a tick of its own; the scene needs it within the window",
			bAfter.Round(time.Millisecond), w)
	}
	if last, err := b.LastRun(ctx, "job"); err != nil || last.By != "a" || last.Runs != 1 || last.Window != w {
		t.Errorf("LastRun after a's run: %+v, %v", last, err)
	}
	// A second past the window, not AfterWindow's 100 ms: the run's write
	// confirms it only if answered within what is left past the window
	// (ErrSlowWrite otherwise, a tick lost and told): loaded make test run
	// 139 answered it 192 ms after Claim's entry.
	time.Sleep(w + time.Second)
	if ran, err := runOnce(ctx, b, "job", nil); !ran {
		if errors.Is(err, runonce.ErrSlowWrite) {
			// A loss told, with its figure: the machine answered the
			// write later than the second the scene leaves it.
			t.Skipf("b's run's write answered too late, its tick told lost (%v): the scene needs it answered within about a second", err)
		}
		t.Fatal(err)
	}
	if last, _ := a.LastRun(ctx, "job"); last.By != "b" || last.Runs != 2 {
		t.Errorf("LastRun after b's run: %+v", last)
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, e := range events {
		got = append(got, e.Outcome.String())
		if e.Job != "job" || e.Latency <= 0 || (e.Outcome == runonce.Ran) != (e.Err == nil) {
			t.Errorf("event %+v", e)
		}
	}
	// A run is told when it ends (a run that panics is told failed, never
	// ran): a's, released after b's first attempt.
	if fmt.Sprint(got) != "[already_ran ran already_ran ran]" {
		t.Errorf("outcomes %v (errors %v, %v), want [already_ran ran already_ran ran]", got, errHeld, errRan)
	}
}

// TestStallNotTakenForDoubles: a stops claiming for six ticks (a process
// stopped, or a scheduler stalled) while b runs them, then ticks again. a
// counted the runs b made while it slept against the ticks it saw, and
// told nearly every job "the job runs more than once per tick" (17 and 20
// of 20, in runs without a double). Only the ticks this instance saw
// count: no job is told.
func TestStallNotTakenForDoubles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: six ticks of a stalled instance, about 7 s")
	}
	defer runonce.NeverOverloaded()()
	root := zktest.Path(t)
	// b attempts 100 ms after a, within W = 300 ms: 200 ms for the load
	// (150 ms left it 50, the least of the table in docs/testing.md).
	const w, p, jobs = 300 * time.Millisecond, 500 * time.Millisecond, 10
	sa, logs := logged(t, zktest.Servers(t))
	a, err := runonce.New(sa, root, runonce.WithWindow(w), runonce.WithInstanceName("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _ := newRunner(t, root, runonce.WithWindow(w), runonce.WithInstanceName("b"))
	ctx := zktest.Context(t, 60*time.Second)
	start := time.Now().Add(100 * time.Millisecond)
	for k := range 14 {
		tick := start.Add(time.Duration(k) * p)
		var wg sync.WaitGroup
		for i := range jobs {
			job := fmt.Sprint("job-", i)
			if k < 4 || k >= 10 { // a sleeps through ticks 4 to 9
				wg.Go(func() {
					time.Sleep(time.Until(tick))
					_, _ = runOnce(ctx, a, job, nil)
				})
			}
			wg.Go(func() {
				time.Sleep(time.Until(tick.Add(100 * time.Millisecond)))
				_, _ = runOnce(ctx, b, job, nil)
			})
		}
		zktest.Wait(t, "the tick's runs", &wg)
	}
	if n := strings.Count(logs.String(), "the job runs more than once per tick"); n > 0 {
		t.Errorf("%d of %d jobs told they run more than once per tick, where each tick ran once:\n%s", n, jobs, strings.Join(runonceLines(logs.String()), "\n"))
	}
}

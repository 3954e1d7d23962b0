package runonce_test

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/hostclock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestUnnamedRunAheadStopsNoTick: b, whose host clock reads 2.75 s ahead
// of a's, runs the job once without a tick (a RunNow, an instance not
// attached), 250 ms after a's tick t0; a claims its ticks by their names.
// b's run raised the record's floor to its fire, by b's clock: on the
// code before, a's ticks t1 to t5, a window and more from that fire, each
// said "unknown" (5 of 5 ran nowhere), and no line named the clocks. The
// run is a run near its fire: t6, within a window of it by b's clock,
// already ran (b's tick, as b names it); the others run, once, and a
// says once that the clocks differ, naming them. Then b runs once more
// without a tick, 40 ms before a's t10 by the server's clock: t10 already
// ran (that run, near it in time), t11 runs.
func TestUnnamedRunAheadStopsNoTick(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ticks of a 500-ms job, about 7 s")
	}
	root := zktest.Path(t)
	const w, period, ahead = 100 * time.Millisecond, 500 * time.Millisecond, 2750 * time.Millisecond
	sa, logs := logged(t, zktest.Servers(t))
	a, err := runonce.New(sa, root, runonce.WithWindow(w), runonce.WithInstanceName("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _ := newRunner(t, root, runonce.WithWindow(w), runonce.WithInstanceName("b"))
	ctx := zktest.Context(t, 30*time.Second)
	unnamedAhead := func(at time.Time) {
		time.Sleep(time.Until(at))
		hostclock.SetOffset(ahead) // b's clock, for its claim alone
		defer hostclock.SetOffset(0)
		if ran, err := runOnce(ctx, b, "job", nil); !ran {
			t.Fatalf("b's claim without a tick: %v", err)
		}
		runonce.WaitLockFree(t, b, "job")
	}
	t0 := time.Now().Truncate(period).Add(period)
	tick := func(k int) time.Time { return t0.Add(time.Duration(k) * period) }
	var said []string
	for k := range 12 {
		switch k {
		case 1:
			unnamedAhead(tick(0).Add(250 * time.Millisecond))
		case 10:
			unnamedAhead(tick(10).Add(-40 * time.Millisecond))
		}
		time.Sleep(time.Until(tick(k).Add(5 * time.Millisecond)))
		said = append(said, outcome(a.ClaimTick(ctx, "job", tick(k))))
	}
	want := []string{"ran", "ran", "ran", "ran", "ran", "ran", "already_ran", "ran", "ran", "ran", "already_ran", "ran"}
	if strings.Join(said, " ") != strings.Join(want, " ") {
		t.Errorf("a's ticks t0..t11: %v\nwant %v\n%s", said, want, logs)
	}
	out := logs.String()
	if n := strings.Count(out, "its host's clock ahead"); n != 1 || !strings.Contains(out, "its_fire=") || !strings.Contains(out, "this_host_clock=") || !strings.Contains(out, "server_dated=") {
		t.Errorf("want one line naming the clocks (b's fire, the server's date, this host's), got %d:\n%s", n, out)
	}
	t.Logf("a: %v\n%s", said, out)
	if strings.Contains(out, "ticks unknown") {
		t.Errorf("ticks told unknown:\n%s", out)
	}
}

// outcome names a ClaimTick's result, its claim released.
func outcome(c *runonce.Claim, err error) string {
	switch {
	case err == nil:
		_ = c.Release()
		return "ran"
	case errors.Is(err, runonce.ErrStale):
		return "stale"
	case errors.Is(err, runonce.ErrAlreadyRan):
		return "already_ran"
	case errors.Is(err, runonce.ErrTickUnknown):
		return "unknown"
	case errors.Is(err, runonce.ErrLockHeld):
		return "held"
	}
	return err.Error()
}

// TestHeldByARunAhead: a, whose clock reads 2.75 s ahead of b's, runs
// the job without a tick and holds its lock across b's next tick. Its
// lock, taken after its write as such a run's is, was told apart from a
// claim under way by a's clock set against b's tick: b waited 7/8 of its
// lock timeout for a write that never comes and said "unknown". The truth
// is held, at once, the tick told lost to the lock; or, a's run within a
// window of the tick by b's clock (200 ms before it), already ran: that
// run is the tick's, still going.
func TestHeldByARunAhead(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: three ticks of a 2-s job, twice, about 12 s")
	}
	for _, c := range []struct {
		before time.Duration // a's run, before b's tick
		want   error
	}{{1350 * time.Millisecond, runonce.ErrLockHeld}, {200 * time.Millisecond, runonce.ErrAlreadyRan}} {
		t.Run(c.before.String(), func(t *testing.T) {
			pair := twoInstances(t)
			a, b := pair.a, pair.b
			ctx := zktest.Context(t, 20*time.Second)
			const period = 2 * time.Second
			tick := time.Now().Truncate(period).Add(period)
			for k := range 2 { // b's second run is its first write of the record: what it says of the server's clock
				time.Sleep(time.Until(tick))
				if cl, err := b.ClaimTick(ctx, "job", tick); err != nil {
					t.Fatal(err)
				} else {
					_ = cl.Release()
				}
				runonce.WaitLockFree(t, b, "job")
				if k == 0 {
					tick = tick.Add(period)
				}
			}
			next := tick.Add(period)
			time.Sleep(time.Until(next.Add(-c.before)))
			hostclock.SetOffset(2750 * time.Millisecond)
			held, err := a.Claim(ctx, "job")
			hostclock.SetOffset(0)
			if err != nil {
				t.Fatalf("a's claim without a tick, its clock ahead: %v", err)
			}
			defer held.Release()
			time.Sleep(time.Until(next))
			start := time.Now()
			_, err = b.ClaimTick(ctx, "job", next)
			took := time.Since(start)
			if !errors.Is(err, c.want) || took > runonce.DefaultLockTimeout/2 {
				t.Errorf("b's claim of the next tick, the lock held by a's run without a tick %v before it, a's clock ahead: %v in %v; want %v at once\n%s",
					c.before, err, took, c.want, pair.logs.String())
			}
		})
	}
}

// TestClocksApartByLessThanAWindow: b's clock reads 60 ms ahead of a's,
// less than the job's window (200 ms): every tick still runs once, by its
// name, and nothing said the clocks differ (the names hide it: b fires
// each tick 60 ms earlier). a tells it, once, at Info, naming the clocks:
// b's at its write's send, the server's mtime of that write, a's at the
// read; set against a's own last write, the server's clock between them.
// b's clock in step with a's, nothing is told.
func TestClocksApartByLessThanAWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: four ticks of a 500-ms job, about 2.5 s")
	}
	root := zktest.Path(t)
	const w, period, ahead = 200 * time.Millisecond, 500 * time.Millisecond, 60 * time.Millisecond
	sa, logs := logged(t, zktest.Servers(t))
	a, err := runonce.New(sa, root, runonce.WithWindow(w), runonce.WithInstanceName("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _ := newRunner(t, root, runonce.WithWindow(w), runonce.WithInstanceName("b"))
	ctx := zktest.Context(t, 20*time.Second)
	t0 := time.Now().Truncate(period).Add(period)
	tick := func(k int) time.Time { return t0.Add(time.Duration(k) * period) }
	claimAt := func(r *runonce.Runner, k int, off time.Duration) string {
		time.Sleep(time.Until(tick(k).Add(5*time.Millisecond - off)))
		hostclock.SetOffset(off) // a clock off reads the tick off: its scheduler fires it early
		defer hostclock.SetOffset(0)
		return outcome(r.ClaimTick(ctx, "job", tick(k).Add(-off)))
	}
	// a's second run is its first write of the record (the first made the
	// node): what it says of the server's clock.
	said := []string{claimAt(a, 0, 0), claimAt(a, 1, 0), claimAt(b, 2, 0), claimAt(a, 2, 0)}
	if out := logs.String(); strings.Contains(out, "clocks differ") {
		t.Errorf("clocks in step told apart:\n%s", out)
	}
	said = append(said, claimAt(b, 3, ahead), claimAt(a, 3, 0))
	if got := strings.Join(said, " "); got != "ran ran ran already_ran ran already_ran" {
		t.Errorf("the ticks: %s, want ran ran ran already_ran ran already_ran", got)
	}
	var lines []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "clocks differ") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "its_clock=") ||
		!strings.Contains(lines[0], "server_mtime=") || !strings.Contains(lines[0], "this_host_clock=") {
		t.Fatalf("want one line at Info naming the clocks, got %d:\n%s", len(lines), logs)
	}
	// By the server's clock between them, not only by the time from b's
	// write to a's read (about 50 ms of the 60).
	m := regexp.MustCompile(`ahead_by_at_least=(\d+)ms`).FindStringSubmatch(lines[0])
	if len(m) < 2 {
		t.Fatalf("no amount:\n%s", lines[0])
	}
	if n, _ := strconv.Atoi(m[1]); n < 30 || n > 60 {
		t.Errorf("ahead by at least %v, want about 60 ms:\n%s", m, lines[0])
	}
}

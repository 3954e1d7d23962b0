package runonce_test

import (
	"errors"
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

// TestHeldByARunAhead: b, whose clock reads 2.75 s ahead of a's, runs the
// job without a tick and holds its lock across a's next tick. Its lock,
// taken after its write as such a run's is, was told apart from a claim
// under way by b's clock set against a's tick: a waited 7/8 of its lock
// timeout for a write that never comes and said "unknown". The truth is
// held: at once, the tick told lost to the lock.
func TestHeldByARunAhead(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a tick of a job held across it, about 2 s")
	}
	pair := twoInstances(t)
	a, b := pair.a, pair.b
	ctx := zktest.Context(t, 20*time.Second)
	tick := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(tick))
	if c, err := b.ClaimTick(ctx, "job", tick); err != nil {
		t.Fatal(err)
	} else {
		_ = c.Release()
	}
	runonce.WaitLockFree(t, b, "job")
	time.Sleep(time.Until(tick.Add(650 * time.Millisecond)))
	hostclock.SetOffset(2750 * time.Millisecond)
	held, err := a.Claim(ctx, "job")
	hostclock.SetOffset(0)
	if err != nil {
		t.Fatalf("a's claim without a tick, its clock ahead: %v", err)
	}
	defer held.Release()
	next := tick.Add(time.Second)
	time.Sleep(time.Until(next))
	start := time.Now()
	_, err = b.ClaimTick(ctx, "job", next)
	took := time.Since(start)
	if !errors.Is(err, runonce.ErrLockHeld) || took > runonce.DefaultLockTimeout/2 {
		t.Errorf("b's claim of the next tick, the lock held by a's run without a tick, a's clock ahead: %v in %v; want ErrLockHeld at once\n%s", err, took, pair.logs.String())
	}
}

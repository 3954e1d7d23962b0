package runonce_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestClaimTickStale: ticks its scheduler fires more than the job's
// window after their scheduled time (a replay of a tick a stopped process
// slept through, a tick cron.DelayIfStillRunning delayed). One the fleet
// ran (b, on time) is skipped, observed as stale and said so, once for an
// episode of them, and once when a tick is on time again (the line said
// "the fleet ran them" of ticks nobody ran); one whose run no record can
// show (at or before the fire of a run without a tick, which may have
// been its run) is unknown, told so; one no instance ran runs, late,
// before the fleet's last run or after it; a tick on time runs.
func TestClaimTickStale(t *testing.T) {
	root := zktest.Path(t)
	const w = 200 * time.Millisecond
	s, logs := logged(t, zktest.Servers(t))
	var outcomes []string
	var ticks []time.Time
	a, err := runonce.New(s, root, runonce.WithWindow(w), runonce.WithObserver(func(e runonce.Event) {
		outcomes, ticks = append(outcomes, e.Outcome.String()), append(ticks, e.Tick)
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _ := newRunner(t, root, runonce.WithWindow(w))
	ctx := zktest.Context(t, 10*time.Second)
	t0 := time.Now().Add(time.Second)
	if ran, err := runOnce(ctx, b, "job", nil); !ran { // a run without a tick: RunNow's
		t.Fatal(err)
	}
	if _, err := a.ClaimTick(ctx, "job", t0.Add(-3*time.Second)); !errors.Is(err, runonce.ErrTickUnknown) || !errors.Is(err, runonce.ErrSkipped) {
		t.Errorf("a late tick, the job's last run without one: %v, want ErrTickUnknown", err)
	}
	time.Sleep(time.Until(t0))
	c, err := b.ClaimTick(ctx, "job", t0)
	if err != nil {
		t.Fatalf("b's tick on time: %v", err)
	}
	_ = c.Release()
	time.Sleep(700 * time.Millisecond)
	if _, err := a.ClaimTick(ctx, "job", t0); !errors.Is(err, runonce.ErrStale) || !errors.Is(err, runonce.ErrSkipped) {
		t.Errorf("the tick b ran, %v late: %v, want ErrStale", time.Since(t0).Round(time.Millisecond), err)
	}
	for _, tick := range []time.Time{t0.Add(-500 * time.Millisecond), t0.Add(300 * time.Millisecond), time.Now()} {
		c, err := a.ClaimTick(ctx, "job", tick)
		if err != nil {
			t.Fatalf("a tick no one ran, %v late: %v", time.Since(tick).Round(time.Millisecond), err)
		}
		_ = c.Release()
	}
	if _, err := a.ClaimTick(ctx, "job", time.Time{}); !errors.Is(err, runonce.ErrInvalidOption) {
		t.Errorf("ClaimTick of the zero time: %v, want ErrInvalidOption", err)
	}
	if got := strings.Join(outcomes, " "); got != "unknown stale ran ran ran" {
		t.Errorf("outcomes %q, want unknown stale ran ran ran", got)
	}
	if len(ticks) != 5 || !ticks[1].Equal(t0) {
		t.Errorf("the events' ticks %v, want the ticks claimed", ticks)
	}
	out := logs.String()
	if strings.Count(out, "stale ticks skipped") != 1 || !strings.Contains(out, "ticks on time again") || !strings.Contains(out, "stale_ticks_skipped=1") ||
		strings.Count(out, "ticks unknown:") != 1 || !strings.Contains(out, "ticks_unknown=1") {
		t.Errorf("the episodes told in other than two lines each:\n%s", out)
	}
}

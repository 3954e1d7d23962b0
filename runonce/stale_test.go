package runonce_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestClaimTickStale (issue 50, item 7): a tick its scheduler fires more
// than the job's window after its scheduled time (a replay of a tick a
// stopped process slept through) is skipped without a request, observed as
// stale and said so, once for an episode of them, and once when a tick is
// on time again; a tick on time runs.
func TestClaimTickStale(t *testing.T) {
	s, logs := logged(t, zktest.Servers(t))
	var outcomes []string
	var ticks []time.Time
	r, err := runonce.New(s, zktest.Path(t), runonce.WithObserver(func(e runonce.Event) {
		outcomes, ticks = append(outcomes, e.Outcome.String()), append(ticks, e.Tick)
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := zktest.Context(t, 10*time.Second)
	now := time.Now()
	for _, tick := range []time.Time{now.Add(-4 * time.Second), now.Add(-3 * time.Second)} {
		if _, err := r.ClaimTick(ctx, "job", tick); !errors.Is(err, runonce.ErrStale) || !errors.Is(err, runonce.ErrSkipped) {
			t.Fatalf("a tick %v late: %v, want ErrStale", time.Since(tick).Round(time.Millisecond), err)
		}
	}
	c, err := r.ClaimTick(ctx, "job", time.Now().Add(-50*time.Millisecond))
	if err != nil {
		t.Fatalf("a tick on time: %v", err)
	}
	_ = c.Release()
	if _, err := r.ClaimTick(ctx, "job", time.Time{}); !errors.Is(err, runonce.ErrInvalidOption) {
		t.Errorf("ClaimTick of the zero time: %v, want ErrInvalidOption", err)
	}
	if got := strings.Join(outcomes, " "); got != "stale stale ran" {
		t.Errorf("outcomes %q, want stale stale ran", got)
	}
	if len(ticks) != 3 || !ticks[0].Equal(now.Add(-4*time.Second)) {
		t.Errorf("the events' ticks %v, want the ticks claimed", ticks)
	}
	out := logs.String()
	if strings.Count(out, "stale ticks skipped") != 1 || !strings.Contains(out, "ticks on time again") || !strings.Contains(out, "stale_ticks_skipped=2") {
		t.Errorf("the episode told in other than two lines:\n%s", out)
	}
}

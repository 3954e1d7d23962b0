package runonce_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// spreadTick plays one tick with WithSpread: each locker in order, a
// window apart from the tick before; it returns the names of those that
// ran (each run released at once) and of those told ErrSlowWrite (a run
// whose write was answered too late to confirm it: the tick lost, as the
// code tells a loaded machine's latency), and fails the test on any other
// Lock error than a skip.
func spreadTick(ctx context.Context, t *testing.T, job string, ls map[string]*runonce.Runner, order ...string) (ran, slow []string) {
	t.Helper()
	for _, name := range order {
		ok, err := runOnce(ctx, ls[name], job, nil)
		switch {
		case ok:
			ran = append(ran, name)
		case errors.Is(err, runonce.ErrSlowWrite):
			t.Logf("%s: %v", name, err)
			slow = append(slow, name)
		case !errors.Is(err, runonce.ErrSkipped):
			t.Fatalf("%s: %v", name, err)
		}
	}
	return ran, slow
}

// TestSpreadAfterALeave: with WithSpread, an instance that wrote once
// since the last run and then left stayed in the run node's Since for
// ever, so the instance that made the last run stepped back on every tick
// after: the job never ran again. Now the tick left to the instance that
// does not come is lost, and that one only; when it comes back, the runs
// spread again, each tick once.
func TestSpreadAfterALeave(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ticks of a fleet with a leave, about 4 s")
	}
	root := zktest.Path(t)
	const w = 150 * time.Millisecond
	ls := map[string]*runonce.Runner{}
	for _, name := range []string{"a", "b"} {
		ls[name], _ = newRunner(t, root, runonce.WithWindow(w), runonce.WithSpread(), runonce.WithInstanceName(name))
	}
	ctx := zktest.Context(t, 30*time.Second)
	// The first run of a job has no run before it to rule out: its write
	// cannot be too late (ErrSlowWrite), and b's is a skip.
	if ran, slow := spreadTick(ctx, t, "job", ls, "a", "b"); fmt.Sprint(ran) != "[a]" || slow != nil {
		t.Fatalf("tick 1: %v ran, %v slow, want [a] and none", ran, slow)
	}
	// b skipped tick 1 and leaves: a alone for ten ticks.
	// A tick a's write confirmed too late is the load's loss, told as
	// such (ErrSlowWrite): it is not the rule's.
	var alone []string
	for range 10 {
		time.Sleep(runonce.AfterWindow(w))
		ran, slow := spreadTick(ctx, t, "job", ls, "a")
		alone = append(alone, strings.Join(ran, "")+strings.Repeat("(slow)", len(slow)))
	}
	lost := 0
	for _, r := range alone {
		if r == "" {
			lost++
		}
	}
	t.Logf("a alone, ten ticks: %q", alone)
	if lost > 1 || alone[0] != "" {
		t.Errorf("a alone: %d of 10 ticks lost (%q), want only the first: the tick left to b", lost, alone)
	}
	// b comes back: each tick once, on both in turn.
	per := map[string]int{}
	for tick := range 6 {
		time.Sleep(runonce.AfterWindow(w))
		ran, slow := spreadTick(ctx, t, "job", ls, "a", "b")
		if len(ran) > 1 || len(ran) == 0 && slow == nil {
			t.Errorf("tick %d after b's return: %v ran (%v told too slow), want one, or none told too slow", tick, ran, slow)
		}
		for _, n := range ran {
			per[n]++
		}
	}
	if per["a"] == 0 || per["b"] == 0 {
		t.Errorf("after b's return the runs did not spread: %v", per)
	}
}

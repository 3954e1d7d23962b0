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
// ran (each run released at once) and fails the test on a Lock error
// other than a skip.
func spreadTick(ctx context.Context, t *testing.T, job string, ls map[string]*runonce.Runner, order ...string) []string {
	t.Helper()
	var ran []string
	for _, name := range order {
		ok, err := runOnce(ctx, ls[name], job, nil)
		switch {
		case ok:
			ran = append(ran, name)
		case !errors.Is(err, runonce.ErrSkipped):
			t.Fatalf("%s: %v", name, err)
		}
	}
	return ran
}

// TestSpreadAfterALeave: with WithSpread, an instance that wrote once
// since the last run and then left stayed in the run node's Since for
// ever, so the instance that made the last run stepped back on every tick
// after: the job never ran again. Now the tick left to the instance that
// does not come is lost, and that one only; when it comes back, the runs
// spread again, each tick once.
func TestSpreadAfterALeave(t *testing.T) {
	root := zktest.Path(t)
	const w = 150 * time.Millisecond
	ls := map[string]*runonce.Runner{}
	for _, name := range []string{"a", "b"} {
		ls[name], _ = newRunner(t, root, runonce.WithWindow(w), runonce.WithSpread(), runonce.WithInstanceName(name))
	}
	ctx := zktest.Context(t, 30*time.Second)
	if ran := spreadTick(ctx, t, "job", ls, "a", "b"); fmt.Sprint(ran) != "[a]" {
		t.Fatalf("tick 1: %v ran, want [a]", ran)
	}
	// b skipped tick 1 and leaves: a alone for ten ticks.
	var alone []string
	for range 10 {
		time.Sleep(runonce.AfterWindow(w))
		alone = append(alone, strings.Join(spreadTick(ctx, t, "job", ls, "a"), ""))
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
		ran := spreadTick(ctx, t, "job", ls, "a", "b")
		if len(ran) != 1 {
			t.Errorf("tick %d after b's return: %v ran, want one", tick, ran)
		}
		for _, n := range ran {
			per[n]++
		}
	}
	if per["a"] == 0 || per["b"] == 0 {
		t.Errorf("after b's return the runs did not spread: %v", per)
	}
}

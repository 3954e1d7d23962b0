package runonce_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestNamelessRunNearTheTick: an unattached instance (a) runs a tick
// without its name, 5 ms after it; b's claim of that tick by its name
// finds a's run the last, its fire 5 ms from the tick. b told the tick
// unknown ("the record cannot tell"), though the record holds that run's
// time: a run within a window of the tick is its run, already ran.
func TestNamelessRunNearTheTick(t *testing.T) {
	pair := twoInstances(t)
	a, b := pair.a, pair.b
	ctx := zktest.Context(t, 20*time.Second)
	tick := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(tick))
	c, err := b.ClaimTick(ctx, "job", tick) // a named run before
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Release()
	runonce.WaitLockFree(t, b, "job")
	next := tick.Add(time.Second)
	time.Sleep(time.Until(next.Add(5 * time.Millisecond)))
	c, err = a.Claim(ctx, "job")
	if err != nil {
		t.Fatalf("a's claim without a tick, 5 ms after it: %v", err)
	}
	_ = c.Release()
	runonce.WaitLockFree(t, a, "job")
	time.Sleep(time.Until(next.Add(150 * time.Millisecond)))
	if _, err := b.ClaimTick(ctx, "job", next); !errors.Is(err, runonce.ErrAlreadyRan) {
		t.Errorf("b's claim of the tick a ran 5 ms after it without its name: %v, want ErrAlreadyRan\n%s", err, pair.logs.String())
	}
}

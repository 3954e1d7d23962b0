package runonce_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// namelessLast makes a's run without a tick (a gocron RunNow, an
// unattached instance) the job's last run, a second after a named one,
// and returns it still holding the job's lock, and the tick after.
func namelessLast(t *testing.T, pair instances) (*runonce.Claim, time.Time) {
	t.Helper()
	a := pair.a
	ctx := zktest.Context(t, 20*time.Second)
	tick := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(tick))
	c, err := a.ClaimTick(ctx, "job", tick) // a named run before it
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Release()
	runonce.WaitLockFree(t, a, "job")
	time.Sleep(time.Until(tick.Add(time.Second)))
	held, err := a.Claim(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	return held, tick.Add(2 * time.Second)
}

// TestHeldByARunWithoutATick: a's run claimed without a tick holds the
// job's lock when b's claim of the next named tick finds it held. Such a
// run writes the record before it takes the lock, so its lock is younger
// than its write, as a named claim's under way is: b waited 7/8 of its
// lock timeout for a write that never comes and said "unknown" (877 ms,
// ErrTickUnknown, before the fix). The truth is held: b says so at once,
// and tells the tick lost to the lock.
func TestHeldByARunWithoutATick(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ticks of a job held across them, about 2 s")
	}
	pair := twoInstances(t)
	held, next := namelessLast(t, pair)
	defer held.Release()
	time.Sleep(time.Until(next))
	start := time.Now()
	_, err := pair.b.ClaimTick(zktest.Context(t, 5*time.Second), "job", next)
	took := time.Since(start)
	if !errors.Is(err, runonce.ErrLockHeld) || took > runonce.DefaultLockTimeout/2 {
		t.Errorf("b's claim of the next tick, the lock held by a's run without a tick: %v in %v; want ErrLockHeld at once\n%s", err, took, pair.logs.String())
	}
	if !strings.Contains(pair.logs.String(), "tick lost") {
		t.Errorf("b did not tell the tick lost:\n%s", pair.logs.String())
	}
}

// TestClaimAfterARunWithoutATick: after a's run without a tick, a's claim
// of the next tick takes the job's lock and has not written when b's
// claim of the same tick finds it held: the holder is the instance of the
// last run, but it took the lock after the tick, so it may be a claim of
// it: b waits for its write, and skips the tick a ran.
func TestClaimAfterARunWithoutATick(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out a claim's window, about 3 s")
	}
	pair := twoInstances(t)
	a, b := pair.a, pair.b
	held, next := namelessLast(t, pair)
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	runonce.WaitLockFree(t, a, "job")
	ctx := zktest.Context(t, 20*time.Second)
	time.Sleep(time.Until(next))
	aTook, bFound := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	defer runonce.SetTakenHook(func() {
		if first.CompareAndSwap(false, true) { // a's claim: wait there until b met its lock
			close(aTook)
			<-bFound
		}
	})()
	type result struct {
		c   *runonce.Claim
		err error
	}
	aDone := make(chan result, 1)
	go func() {
		c, err := a.ClaimTick(ctx, "job", next)
		aDone <- result{c, err}
	}()
	<-aTook
	go func() {
		time.Sleep(200 * time.Millisecond) // b reads the record and finds the lock held meanwhile
		close(bFound)
	}()
	_, err := b.ClaimTick(ctx, "job", next)
	r := <-aDone
	if r.err != nil {
		t.Fatalf("a's claim of the tick: %v", r.err)
	}
	_ = r.c.Release()
	if !errors.Is(err, runonce.ErrAlreadyRan) {
		t.Errorf("b's claim of the tick a's claim under way ran: %v, want ErrAlreadyRan\n%s", err, pair.logs.String())
	}
}

package runonce_test

import (
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestHeldByAClaimOfTheTick: b reads the record of a named tick open, then
// a's claim of the same tick takes the job's lock and runs the tick, and
// b's take finds the lock held. b told "tick lost" (ErrLockHeld, a Warn
// naming a) for a tick a was running: a loaded make test's fleet said so
// 54 times in 10 s, and lost the ticks whose holding claim then stepped
// back. The lock was taken after the last run was recorded, so it is a
// claim under way: b decides again on its write, and skips the tick as
// already run, with no warning.
func TestHeldByAClaimOfTheTick(t *testing.T) {
	root := zktest.Path(t)
	var logs zktest.SyncBuffer
	a, _ := newRunner(t, root, runonce.WithInstanceName("instance-a"))
	b, _ := newRunner(t, root, runonce.WithInstanceName("instance-b"),
		runonce.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	ctx := zktest.Context(t, 20*time.Second)
	tick := time.Now()
	c, err := a.ClaimTick(ctx, "job", tick) // the last run, named
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	runonce.WaitLockFree(t, a, "job")
	if _, err := b.ClaimTick(ctx, "job", tick); !errors.Is(err, runonce.ErrAlreadyRan) { // b's first write of the job
		t.Fatalf("b's claim of the tick a ran: %v, want ErrAlreadyRan", err)
	}
	tick = tick.Add(2 * runonce.DefaultWindow)
	time.Sleep(time.Until(tick))

	bRead, aClaimed := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	defer runonce.SetAfterReadHook(func(string) {
		if first.CompareAndSwap(false, true) { // b's read: wait there until a holds the tick
			close(bRead)
			<-aClaimed
		}
	})()
	errB := make(chan error, 1)
	go func() {
		c, err := b.ClaimTick(ctx, "job", tick)
		if err == nil {
			err = c.Release()
		}
		errB <- err
	}()
	<-bRead
	held, err := a.ClaimTick(ctx, "job", tick)
	close(aClaimed)
	if err != nil {
		t.Fatalf("a's claim of the tick: %v", err)
	}
	err = <-errB
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, runonce.ErrAlreadyRan) {
		t.Errorf("b's claim of the tick a runs: %v, want ErrAlreadyRan", err)
	}
	if strings.Contains(logs.String(), "tick lost") {
		t.Errorf("b told a tick lost that a ran:\n%s", logs.String())
	}
}

// TestHeldByAnEarlierRun: a's run of a named tick still holds the job's
// lock at the next tick, b's claim of which is lost to it (ErrLockHeld,
// told): a lock taken before the last run was recorded is that run's,
// not a claim under way, and no write of it is waited for.
func TestHeldByAnEarlierRun(t *testing.T) {
	root := zktest.Path(t)
	var logs zktest.SyncBuffer
	a, _ := newRunner(t, root, runonce.WithInstanceName("instance-a"))
	b, _ := newRunner(t, root, runonce.WithInstanceName("instance-b"),
		runonce.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	ctx := zktest.Context(t, 20*time.Second)
	tick := time.Now()
	running, err := a.ClaimTick(ctx, "job", tick)
	if err != nil {
		t.Fatal(err)
	}
	defer running.Release()
	if _, err := b.ClaimTick(ctx, "job", tick); !errors.Is(err, runonce.ErrAlreadyRan) {
		t.Fatalf("b's claim of the tick a runs: %v, want ErrAlreadyRan", err)
	}
	tick = tick.Add(2 * runonce.DefaultWindow)
	time.Sleep(time.Until(tick))
	if _, err := b.ClaimTick(ctx, "job", tick); !errors.Is(err, runonce.ErrLockHeld) || !strings.Contains(err.Error(), "by instance-a") {
		t.Errorf("b's claim of the next tick, a's run going on: %v, want ErrLockHeld naming instance-a", err)
	}
	if !strings.Contains(logs.String(), "tick lost") {
		t.Errorf("b did not tell the tick lost:\n%s", logs.String())
	}
}

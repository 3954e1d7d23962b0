package runonce_test

import (
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// TestHeldByAClaimOfTheTick: b reads the record of a named tick open, then
// a's claim of the same tick takes the job's lock and runs the tick, and
// b's take finds the lock held. b told "tick lost" (ErrLockHeld, a Warn
// naming a) for a tick a was running: a loaded make test's fleet said so
// 54 times in 10 s, and lost the ticks whose holding claim then stepped
// back. The lock was taken after the run node's last write, so it is a
// claim under way: b decides again on its write, and skips the tick as
// already run, with no warning.
func TestHeldByAClaimOfTheTick(t *testing.T) {
	pair := twoInstances(t)
	err := claimUnderWay(t, pair)
	if !errors.Is(err, runonce.ErrAlreadyRan) {
		t.Errorf("b's claim of the tick a runs: %v, want ErrAlreadyRan", err)
	}
	if strings.Contains(pair.logs.String(), "tick lost") {
		t.Errorf("b told a tick lost that a ran:\n%s", pair.logs.String())
	}
}

// TestHeldByAClaimUnread: as TestHeldByAClaimOfTheTick, but b's read of
// the lock's holder fails (a dropped connection, a loaded server: the hook
// fails it). b took the unread holder for an earlier run's and told the
// tick lost (ErrLockHeld, "tick lost") while a ran it: the mixed fleet of
// TestFleetClocks, beside a soak, told 59 ticks held that the holder then
// ran. The holder may be a claim of the tick under way: b tells the tick
// unknown (ErrTickUnknown), not lost.
func TestHeldByAClaimUnread(t *testing.T) {
	pair := twoInstances(t)
	defer runonce.SetHolderReadHook(func() error { return zk.ErrConnectionClosed })()
	err := claimUnderWay(t, pair)
	if !errors.Is(err, runonce.ErrTickUnknown) || !strings.Contains(err.Error(), "could not read") {
		t.Errorf("b's claim of the tick a runs, its holder unread: %v, want ErrTickUnknown saying so", err)
	}
	if strings.Contains(pair.logs.String(), "tick lost") {
		t.Errorf("b told a tick lost that a ran:\n%s", pair.logs.String())
	}
}

// claimUnderWay plays the scene of TestHeldByAClaimOfTheTick: a runs a
// named tick, b skips it; at a later tick, b reads the record, then a's
// claim of that tick takes the job's lock, and b's take finds it held. It
// returns b's claim's outcome (its hold released).
func claimUnderWay(t *testing.T, pair instances) error {
	t.Helper()
	a, b := pair.a, pair.b
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
	return err
}

// TestHeldByAnEarlierRun: a's run of a named tick still holds the job's
// lock at the next tick, b's claim of which is lost to it (ErrLockHeld,
// told): a lock taken before the run node's last write is that run's, not
// a claim under way, and no write of it is waited for (a wait would leave
// b's watch on the run node: b7a622a compared the lock's ctime with the
// last run's time, which is dated back to its claim's entry, and waited
// here).
func TestHeldByAnEarlierRun(t *testing.T) {
	pair := twoInstances(t)
	a, b, logs := pair.a, pair.b, pair.logs
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
	if n := zktest.WatchesBySession(t, pair.root+"/")[pair.sb.SessionID()]; n > 0 {
		t.Errorf("b holds %d watches below the job: it waited for a write of the run that holds the lock", n)
	}
}

// instances is two Runners of one root, instance-a and instance-b, with
// b's session and log.
type instances struct {
	root string
	a, b *runonce.Runner
	sb   *zklock.Session
	logs *zktest.SyncBuffer
}

// twoInstances returns two instances of a root of t's own.
func twoInstances(t *testing.T) instances {
	t.Helper()
	in := instances{root: zktest.Path(t), logs: new(zktest.SyncBuffer)}
	in.a, _ = newRunner(t, in.root, runonce.WithInstanceName("instance-a"))
	in.b, in.sb = newRunner(t, in.root, runonce.WithInstanceName("instance-b"),
		runonce.WithLogger(slog.New(slog.NewTextHandler(in.logs, nil))))
	return in
}

// TestHeldByAFirstClaim: a's claim of a job's first tick takes the job's
// lock and has not yet made the run node when b's claim of the same tick
// reads (no node) and finds the lock held. b told the tick held, lost to
// the lock, though a ran it (the ninth review of the fleet, item 3, met in
// the mixed fleet's first ticks); now it waits for the node and skips the
// tick a ran.
func TestHeldByAFirstClaim(t *testing.T) {
	pair := twoInstances(t)
	a, b, logs := pair.a, pair.b, pair.logs
	ctx := zktest.Context(t, 20*time.Second)
	tick := time.Now()
	aTook, bFound := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	defer runonce.SetBeforeCreateHook(func() {
		if first.CompareAndSwap(false, true) { // a's first claim: wait there until b met its lock
			close(aTook)
			<-bFound
		}
	})()
	aErr := make(chan error, 1)
	go func() {
		c, err := a.ClaimTick(ctx, "job", tick)
		if err == nil {
			err = c.Release()
		}
		aErr <- err
	}()
	<-aTook
	go func() { time.Sleep(300 * time.Millisecond); close(bFound) }() // b reads and meets the lock meanwhile
	_, err := b.ClaimTick(ctx, "job", tick)
	if err := <-aErr; err != nil {
		t.Fatalf("a's first claim: %v", err)
	}
	if !errors.Is(err, runonce.ErrAlreadyRan) {
		t.Errorf("b's claim of the first tick, which a ran: %v, want ErrAlreadyRan", err)
	}
	if strings.Contains(logs.String(), "tick lost") {
		t.Errorf("b told the tick lost:\n%s", logs)
	}
}

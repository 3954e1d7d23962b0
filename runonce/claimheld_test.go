package runonce_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
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
	late, err := claimUnderWay(t, pair)
	if !errors.Is(err, runonce.ErrAlreadyRan) {
		skipIfLate(t, err, late)
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
	late, err := claimUnderWay(t, pair)
	if !errors.Is(err, runonce.ErrTickUnknown) || !strings.Contains(err.Error(), "could not read") {
		skipIfLate(t, err, late)
		t.Errorf("b's claim of the tick a runs, its holder unread: %v, want ErrTickUnknown saying so", err)
	}
	if strings.Contains(pair.logs.String(), "tick lost") {
		t.Errorf("b told a tick lost that a ran:\n%s", pair.logs.String())
	}
}

// skipIfLate skips a claimUnderWay scene whose claim the machine started
// late: its outcome err told stale or unknown (a tick told, never one run
// twice: err nil fails the scene whatever the delay), the claim started at
// least late after its tick on the test's clock, read before the call (the
// claim's own entry comes later still). A named tick claimed more than
// the window (DefaultWindow, 500 ms) after it is judged late by the rule;
// the scene claims it at once (loaded make tests fired it 510 ms late),
// and is judged whenever the claim started within the window.
func skipIfLate(t *testing.T, err error, late time.Duration) {
	t.Helper()
	if late >= runonce.DefaultWindow && (errors.Is(err, runonce.ErrStale) || errors.Is(err, runonce.ErrTickUnknown)) {
		t.Skipf("a claim started %v after its tick, past its window (%v): the machine made it late, and it was told so (%v); the scene needs its claims started within the window",
			late.Round(time.Millisecond), runonce.DefaultWindow, err)
	}
}

// claimUnderWay plays the scene of TestHeldByAClaimOfTheTick: a runs a
// named tick, b skips it; at a later tick, b reads the record, then a's
// claim of that tick takes the job's lock, and b's take finds it held. It
// returns how long after the tick b's claim was started (its entry is
// later) and b's claim's outcome (its hold released).
func claimUnderWay(t *testing.T, pair instances) (time.Duration, error) {
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
	late := time.Since(tick)
	if _, err := b.ClaimTick(ctx, "job", tick); !errors.Is(err, runonce.ErrAlreadyRan) { // b's first write of the job
		skipIfLate(t, err, late)
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
	bLate := time.Since(tick)
	errB := claimInBackground(ctx, b, tick)
	<-bRead
	aLate := time.Since(tick)
	held, err := a.ClaimTick(ctx, "job", tick)
	close(aClaimed)
	if err != nil {
		skipIfLate(t, err, aLate)
		t.Fatalf("a's claim of the tick: %v", err)
	}
	err = <-errB
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	return bLate, err
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
	defer runonce.SetTakenHook(func() {
		if first.CompareAndSwap(false, true) { // a's first claim: wait there until b met its lock
			close(aTook)
			<-bFound
		}
	})()
	aErr := claimInBackground(ctx, a, tick)
	<-aTook
	go func() { time.Sleep(300 * time.Millisecond); close(bFound) }() // b reads and meets the lock meanwhile
	bFindsItRan(t, ctx, b, tick, aErr, logs)
}

// TestHeldByAClaimAcrossAKeepWrite: a's claim of a named tick takes the
// job's lock; before its write, c (an instance that has not written the
// job's record yet) skips an earlier tick and writes the record as it is
// (a keep write, no run); b's claim of a's tick then finds a's lock older
// than the record's last write. b took it for an earlier run's and told
// the tick lost, and a, whose write the keep write refused, decided again
// and ran it (the mixed fleet of TestFleetClocks: 45 ticks told held that
// ran). A lock is an earlier run's only when taken before the last run's
// write, which a keep write carries on: b waits for a's write and skips
// the tick a ran.
func TestHeldByAClaimAcrossAKeepWrite(t *testing.T) {
	pair := twoInstances(t)
	a, b, logs := pair.a, pair.b, pair.logs
	c, _ := newRunner(t, pair.root, runonce.WithInstanceName("instance-c"))
	ctx := zktest.Context(t, 20*time.Second)
	first := time.Now()
	ran, err := a.ClaimTick(ctx, "job", first)
	if err != nil {
		t.Fatal(err)
	}
	if err := ran.Release(); err != nil {
		t.Fatal(err)
	}
	tick := first.Add(2 * runonce.DefaultWindow)
	time.Sleep(time.Until(tick))
	aTook, bFound := make(chan struct{}), make(chan struct{})
	var once, found atomic.Bool
	defer runonce.SetTakenHook(func() {
		if once.CompareAndSwap(false, true) { // a's first take: held until b met its lock
			close(aTook)
			select {
			case <-bFound:
			case <-time.After(10 * time.Second): // b never met the lock: the test fails below
			}
		}
	})()
	defer runonce.SetHolderReadHook(func() error {
		if found.CompareAndSwap(false, true) {
			close(bFound)
		}
		return nil
	})()
	aErr := claimInBackground(ctx, a, tick)
	<-aTook
	if _, err := c.ClaimTick(ctx, "job", first); !errors.Is(err, runonce.ErrSkipped) {
		t.Fatalf("c's claim of the tick a ran: %v, want it skipped", err)
	}
	bFindsItRan(t, ctx, b, tick, aErr, logs)
}

// bFindsItRan claims tick on b while a's claim of it (aErr) is under way,
// and fails t unless a's claim ran and b was told ErrAlreadyRan, without
// telling the tick lost.
func bFindsItRan(t *testing.T, ctx context.Context, b *runonce.Runner, tick time.Time, aErr <-chan error, logs fmt.Stringer) {
	t.Helper()
	_, err := b.ClaimTick(ctx, "job", tick)
	if err := <-aErr; err != nil {
		t.Fatalf("a's claim: %v", err)
	}
	if !errors.Is(err, runonce.ErrAlreadyRan) {
		t.Errorf("b's claim of the tick a ran: %v, want ErrAlreadyRan", err)
	}
	if strings.Contains(logs.String(), "tick lost") {
		t.Errorf("b told the tick lost:\n%s", logs)
	}
}

// claimInBackground claims r's tick of "job" on a goroutine of its own,
// releasing the run at once; the channel gives the outcome.
func claimInBackground(ctx context.Context, r *runonce.Runner, tick time.Time) <-chan error {
	out := make(chan error, 1)
	go func() {
		c, err := r.ClaimTick(ctx, "job", tick)
		if err == nil {
			err = c.Release()
		}
		out <- err
	}()
	return out
}

// TestOwnClaimUnderWayIsNotHeld: a fire of a job while this instance's
// own claim of an earlier tick is still deciding (robfig/cron runs each
// fire on a goroutine of its own; a claim waits up to its lock timeout for
// another instance's write) cannot claim, but the tick is not lost to the
// lock: no run of this instance holds it, and another instance may run
// the tick. It is unknown (ErrTickUnknown), never held. On the code
// before it was ErrLockHeld, "by a run of this instance": cronlock's mixed
// fleet (node-1's lock timeout 3 s) told 79 ticks held that node-2 ran.
// While this instance's run of the tick holds the lock, a fire of the next
// is held, truly.
func TestOwnClaimUnderWayIsNotHeld(t *testing.T) {
	a, _ := newRunner(t, zktest.Path(t), runonce.WithInstanceName("instance-a"))
	ctx := zktest.Context(t, 20*time.Second)
	at := secondTicks()
	_ = claimOnTime(t, ctx, a, at, 0).Release()
	runonce.WaitLockFree(t, a, "job")
	read, goOn := make(chan struct{}), make(chan struct{})
	var once sync.Once
	restore := runonce.SetAfterReadHook(func(string) { once.Do(func() { close(read); <-goOn }) })
	defer restore()
	time.Sleep(time.Until(at(1)))
	first := claimInBackground(ctx, a, at(1)) // held after its read
	<-read
	_, err := a.ClaimTick(ctx, "job", at(1).Add(500*time.Millisecond))
	close(goOn)
	if !errors.Is(err, runonce.ErrTickUnknown) || errors.Is(err, runonce.ErrLockHeld) {
		t.Errorf("a fire while this instance's claim of an earlier tick decides: %v, want ErrTickUnknown, not ErrLockHeld", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("the claim under way: %v", err)
	}
	restore()
	run, err := a.ClaimTick(ctx, "job", at(2))
	if err != nil {
		t.Fatalf("tick t+2: %v", err)
	}
	defer run.Release()
	if _, err := a.ClaimTick(ctx, "job", at(2).Add(500*time.Millisecond)); !errors.Is(err, runonce.ErrLockHeld) {
		t.Errorf("a fire while this instance's run holds the lock: %v, want ErrLockHeld", err)
	}
}

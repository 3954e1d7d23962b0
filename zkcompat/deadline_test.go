package zkcompat_test

import (
	"context"
	"errors"
	"flag"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

var (
	deadlineRounds = flag.Int("deadline.rounds", 3, "TestLockContextDeadline: failed waits to time")
	deadlineWait   = flag.Duration("deadline.wait", 500*time.Millisecond, "TestLockContextDeadline: each wait's deadline")
)

// LockContext's error wraps ctx's, as zk.Lock has no error for it: ==
// with ctx's error fails, errors.Is holds (a context ended before the
// call, and one whose deadline passes while the lock is held elsewhere).
func TestLockContextErrorWrapsContexts(t *testing.T) {
	c, other := conn(t), conn(t)
	p := zktest.Path(t)
	l := zkcompat.NewLock(c, p, acl)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	err := l.LockContext(cancelled)
	if !errors.Is(err, context.Canceled) || err == context.Canceled { //nolint:errorlint // == is the point
		t.Fatalf("LockContext(cancelled) = %v; want an error wrapping context.Canceled, not that value itself", err)
	}
	holder := zk.NewLock(other, p, acl)
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock() //nolint:errcheck
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = l.LockContext(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || err == context.DeadlineExceeded { //nolint:errorlint // == is the point
		t.Fatalf("LockContext past its deadline = %v; want an error wrapping context.DeadlineExceeded, not that value itself", err)
	}
	t.Logf("past its deadline: %v", err)
}

// How far past its deadline a failed LockContext returns, and when its
// node goes: each round, a zk.Lock of another connection holds the path,
// the drop-in's handle (its session's first lease already proved) waits
// with a deadline of -deadline.wait, and a third connection watches the
// path's children. "past" is the return's time after the deadline;
// "listed" whether a listing sent right after the return still had the
// drop-in's node; "gone" when the third connection saw it go, from the
// return (negative: before the return; the delete is queued before
// LockContext returns and sent in the background). Load-neutral: it
// fails only if LockContext returns before its deadline, with anything
// but an error wrapping ctx's, or if the node never goes (a hang guard of
// 10 s); the figures are logged. docs/interop.md gives them, measured
// against scripts/zk.sh's server:
//
//	TIERLOCK_ZK_SERVERS=127.0.0.1:PORT go test -count=1 -v -run TestLockContextDeadline -deadline.rounds 30 ./zkcompat
func TestLockContextDeadline(t *testing.T) {
	c, other, watcher := conn(t), conn(t), conn(t)
	p := zktest.Path(t)
	l := zkcompat.NewLock(c, p, acl)
	if err := l.Lock(); err != nil { // the first lease, out of the way
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	holder := zk.NewLock(other, p, acl)
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock() //nolint:errcheck
	var pasts, gones []time.Duration
	listed := 0
	for round := range *deadlineRounds {
		seen := make(chan time.Time, 1) // when the watcher saw the drop-in's node go
		stop := make(chan struct{})
		go watchGone(watcher, p, seen, stop)
		ctx, cancel := context.WithTimeout(context.Background(), *deadlineWait)
		deadline, _ := ctx.Deadline()
		err := l.LockContext(ctx)
		returned := time.Now()
		cancel()
		kids, _, lerr := watcher.Children(p)
		if lerr != nil {
			close(stop)
			t.Fatal(lerr)
		}
		if !errors.Is(err, context.DeadlineExceeded) || err == context.DeadlineExceeded { //nolint:errorlint // == is the point
			close(stop)
			t.Fatalf("round %d: LockContext = %v; want an error wrapping context.DeadlineExceeded", round, err)
		}
		past := returned.Sub(deadline)
		if past < 0 {
			close(stop)
			t.Fatalf("round %d: LockContext returned %v before its deadline", round, -past)
		}
		var gone time.Time
		select {
		case gone = <-seen:
		case <-time.After(10 * time.Second):
			close(stop)
			t.Fatalf("round %d: the drop-in's node not gone 10 s after LockContext returned (children %v)", round, zktest.Children(t, watcher, p))
		}
		close(stop)
		if len(kids) > 1 {
			listed++
		}
		pasts, gones = append(pasts, past), append(gones, gone.Sub(returned))
		t.Logf("round %d: returned %v past the deadline; node listed at the return: %v; gone %v after the return",
			round, past.Round(10*time.Microsecond), len(kids) > 1, gone.Sub(returned).Round(10*time.Microsecond))
	}
	slices.Sort(pasts)
	slices.Sort(gones)
	n := len(pasts)
	if n == 0 {
		return
	}
	t.Logf("%d waits of %v: past the deadline median %v, max %v; node listed at the return %d times; gone after the return median %v, max %v (min %v)",
		n, *deadlineWait, pasts[n/2].Round(10*time.Microsecond), pasts[n-1].Round(10*time.Microsecond), listed,
		gones[n/2].Round(10*time.Microsecond), gones[n-1].Round(10*time.Microsecond), gones[0].Round(10*time.Microsecond))
}

// watchGone sends on seen the time at which conn was told that the
// children of p changed to one (the holder's) after being more (the
// drop-in's node queued behind it), until stop is closed.
func watchGone(conn *zk.Conn, p string, seen chan<- time.Time, stop <-chan struct{}) {
	queued, at := false, time.Time{} // at: when the last event came
	for {
		kids, _, ev, err := conn.ChildrenW(p)
		if err != nil {
			return
		}
		switch {
		case len(kids) > 1:
			queued = true
		case queued:
			seen <- at
			return
		}
		select {
		case <-ev:
			at = time.Now()
		case <-stop:
			return
		}
	}
}

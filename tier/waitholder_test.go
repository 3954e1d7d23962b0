package tier_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// waitAll runs n acquisitions of l at once, each under a context of its
// own that ends at deadline, and returns their errors (a nil one failed
// the test).
func waitAll(t *testing.T, l *tier.Lock, n int, deadline time.Time) []error {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			held, err := l.Acquire(ctx)
			if err == nil {
				l.Release(held)
			}
			errs[i] = err
		}()
	}
	zktest.Wait(t, "the waiters", &wg)
	for i, err := range errs {
		if err == nil {
			t.Fatalf("waiter %d acquired a lock held elsewhere", i)
		}
	}
	return errs
}

// Twenty goroutines of one process wait, under one deadline, for a lock
// another process holds: one waits in ZooKeeper, the others in the gate
// behind it. Every error names the holder with its owner (its label and
// session), whichever tier the wait ended in, and names the gate where
// the wait spent its time there: only the goroutine that went to
// ZooKeeper at once may say it waited in tier 2 alone. On e876833, of the
// 20 errors, those that passed the gate as the deadline came said "waited
// 500ms in tier 2 (ZooKeeper), queue not read", and those that ended in
// the gate "behind a goroutine of this process that holds no node yet".
func TestWaitersOfOneProcessNameTheHolder(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	s1, s2 := connect(t, servers), connect(t, servers)
	holder := newLock(t, s1, p, tier.WithLockOptions(zklock.WithLabel("the-holder")))
	held, err := holder.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release(held)
	owner := []string{`"the-holder"`, fmt.Sprintf("session 0x%x", s1.SessionID())}

	waiters := newLock(t, s2, p)
	for round := range 3 {
		errs := waitAll(t, waiters, 20, time.Now().Add(500*time.Millisecond))
		tier2Alone, noHolder, example := 0, 0, ""
		for _, err := range errs {
			msg := err.Error()
			var we *tier.WaitError
			if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("round %d: %v: not a WaitError of the deadline", round, err)
			}
			if !strings.Contains(msg, owner[0]) || !strings.Contains(msg, owner[1]) {
				noHolder++
				example = msg
			}
			if strings.Contains(msg, "in tier 2 (ZooKeeper)") && !strings.Contains(msg, "tier 1") {
				tier2Alone++
			}
		}
		if noHolder > 0 {
			t.Errorf("round %d: %d of %d errors do not name the holder's label and session (%s), such as %q", round, noHolder, len(errs), strings.Join(owner, ", "), example)
		}
		if tier2Alone > 1 {
			t.Errorf("round %d: %d errors say their wait was in tier 2 alone; only one goroutine can have waited there from the start", round, tier2Alone)
		}
		t.Logf("round %d, one of each:\n%v\n%v", round, errs[0], errs[len(errs)-1])
	}
}

// A wait that ends while the session has no connection says since when,
// and matches the outage's error, ErrDisconnected, beside the deadline,
// in either tier; it reads nothing (no read would be answered). On
// e876833 each said "1 ahead, holder … (watched) …" or "behind a
// goroutine of this process that holds no node yet", with the deadline
// alone, and errors.Is(err, tier.ErrDisconnected) was false.
func TestWaitEndedInOutageSaysSo(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	s1 := connect(t, servers)
	px, err := faultproxy.New(servers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	s2 := connect(t, []string{px.Addr()}, zklock.WithLogger(quietLog), zklock.WithSessionTimeout(10*time.Second))
	holder := newLock(t, s1, p, tier.WithLockOptions(zklock.WithLabel("the-holder")))
	held, err := holder.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release(held)
	waiters := newLock(t, s2, p)
	go func() {
		time.Sleep(300 * time.Millisecond) // the waiters queued (node, gate)
		px.Partition(0)
	}()
	cut := time.Now().Add(300 * time.Millisecond)
	errs := waitAll(t, waiters, 5, time.Now().Add(1500*time.Millisecond))
	px.Heal()
	for _, err := range errs {
		var we *tier.WaitError
		if !errors.As(err, &we) || !errors.Is(err, tier.ErrDisconnected) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%v: not a WaitError of the deadline and the outage", err)
			continue
		}
		// Since when, to the millisecond: not before the cut (within the
		// test's 100-ms margin; the strings sort as the times of one day).
		_, since, ok := strings.Cut(err.Error(), "no connection to ZooKeeper since ")
		if earliest := cut.Add(-100 * time.Millisecond).Format("15:04:05.000"); !ok || len(since) < len(earliest) || since[:len(earliest)] < earliest {
			t.Errorf("%v: does not say since when, or too early: the connection was cut at %v", err, cut.Format("15:04:05.000"))
		}
	}
	t.Logf("one of them: %v", errs[0])
}

package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// A wait third in line names the holder and its owner (label, session),
// not only the holder's bare node beside the owner of the node it
// watches: that named the wrong process. On e876833: "2 ahead, holder
// …-0000000000, watching …-0000000001 created by …@vm "middle" in session
// <the middle's>".
func TestWaitNamesTheHolderNotThePredecessor(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	s1, s2, s3 := connect(t, servers), connect(t, servers), connect(t, servers)
	h, err := newLock(t, s1, p, zklock.WithLabel("the-holder")).Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	middle := goAcquire(ctxT(t, 10*time.Second), newLock(t, s2, p, zklock.WithLabel("middle")))
	eventually(t, 10*time.Second, "the middle queued", func() bool { return len(children(t, s1.Conn(), p)) == 2 })

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = newLock(t, s3, p).Acquire(ctx)
	var we *zklock.WaitError
	if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v: not a WaitError of the deadline", err)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{`"the-holder"`, fmt.Sprintf("session 0x%x", s1.SessionID()), "2 ahead"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not say %s", msg, want)
		}
	}
	for _, not := range []string{`"middle"`, fmt.Sprintf("0x%x", s2.SessionID())} {
		if strings.Contains(msg, not) {
			t.Errorf("%q names the node it watched, %s, beside the holder", msg, not)
		}
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if a := <-middle; a.err != nil {
		t.Fatal(a.err)
	} else {
		a.h.Release()
	}
}

// Issue 55: a waiter whose node went with its session queues again in a
// new session; when that new node is not listed before the wait ends, its
// error names who holds the lock then, never the holder of the earlier
// session's listing. Here that holder released meanwhile and another
// process took the lock; the waiter's create in its new session is held
// back until its deadline (the writer held: reads still go out). On
// e876833 the error named the first holder: "1 ahead, holder
// <first>-0000000000 (watched) created by …"the-first"… in session <the
// first's>".
func TestRequeueForgetsTheEarlierListing(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a drop and a requeue, about 5 s")
	}
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	s1, s3 := connect(t, servers), connect(t, servers)
	px := proxyTo(t, servers[0])
	s2 := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(time.Second), zklock.WithLogger(quietLog))
	first, err := newLock(t, s1, p, zklock.WithLabel("the-first")).Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	firstNode := first.Node()[len(p)+1:]
	firstSession := s1.SessionID()
	deadline := time.Now().Add(5 * time.Second) // beyond the expiry below: about 1.2 s
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	waiter := goAcquire(ctx, newLock(t, s2, p, zklock.WithRecheckInterval(100*time.Millisecond)))
	eventually(t, 10*time.Second, "the waiter queued", func() bool { return len(children(t, s1.Conn(), p)) == 2 })

	// Its session expires behind a partition; the lock passes on meanwhile.
	px.Partition(0)
	eventually(t, 10*time.Second, "the waiter's session expired", func() bool { return len(children(t, s1.Conn(), p)) == 1 })
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	second, err := newLock(t, s3, p, zklock.WithLabel("the-second")).Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release()
	let := zklock.HoldWriterForTest() // the waiter's create in its new session waits until the deadline
	defer let()
	px.Heal()
	a := <-waiter
	let()
	if a.err == nil {
		a.h.Release()
		t.Fatal("the waiter acquired the lock with its create held back")
	}
	msg := a.err.Error()
	t.Log(msg)
	for _, not := range []string{firstNode, `"the-first"`, fmt.Sprintf("0x%x", firstSession)} {
		if strings.Contains(msg, not) {
			t.Errorf("%q names the earlier session's listing (%s)", msg, not)
		}
	}
}

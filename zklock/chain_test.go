package zklock_test

import (
	"context"
	"errors"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The fencing token is the holder node's czxid, or the pzxid of a listing
// that found the node alone (never below the czxid); strictly increasing
// across holders either way. A waiter granted by the shortcut has its
// czxid exactly.
func TestTokenKinds(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 20*time.Second)
	s := connect(t, servers)
	other := connect(t, servers)
	a, b := newLock(t, s, p), newLock(t, other, p)
	var last int64
	check := func(l *zklock.Lock, exact bool) {
		t.Helper()
		_, stat, err := other.Conn().Get(l.Node())
		if err != nil {
			t.Fatal(err)
		}
		tok := l.Token()
		switch {
		case exact && tok != stat.Czxid:
			t.Fatalf("token %d, node's czxid %d", tok, stat.Czxid)
		case tok < stat.Czxid:
			t.Fatalf("token %d below the node's czxid %d", tok, stat.Czxid)
		case tok <= last:
			t.Fatalf("token %d after %d", tok, last)
		}
		last = tok
		if got, err := l.NodeToken(ctx, l.Node()); err != nil || got != tok {
			t.Fatalf("NodeToken = %d, %v; Token %d", got, err, tok)
		}
		if _, err := l.NodeToken(ctx, l.Node()+"x"); !errors.Is(err, zklock.ErrNotHeld) {
			t.Fatalf("NodeToken of another node: %v", err)
		}
	}
	for i := 0; i < 3; i++ {
		for _, l := range []*zklock.Lock{a, b} { // alone: the listing's pzxid
			if err := l.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			check(l, false)
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		done := queueBehind(t, ctx, a, b, other) // a: alone; b: waits
		check(a, false)
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		check(b, true)
		if err := b.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// queueBehind makes b's node wait right behind a's hold and returns once
// b's waiter watches a's node.
func queueBehind(t *testing.T, ctx context.Context, a, b *zklock.Lock, bs *zklock.Session) <-chan error {
	t.Helper()
	if err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	getData := zklock.Written(bs, zklock.OpGetData)
	done := make(chan error, 1)
	go func() { done <- b.Acquire(ctx) }()
	eventually(t, 10*time.Second, "the waiter's watch", func() bool {
		return zklock.Written(bs, zklock.OpGetData) >= getData+1
	})
	return done
}

// When the only node ahead of a waiter is deleted, the waiter leads on the
// watch event without listing the queue again: the hand-off chain is the
// holder's delete and one event. With the shortcut off (the code before
// it), the waiter lists once more and this test fails.
func TestShortcutSkipsListing(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 20*time.Second)
	as, bs := connect(t, servers), connect(t, servers)
	a, b := newLock(t, as, p), newLock(t, bs, p)
	for i := 0; i < 3; i++ {
		done := queueBehind(t, ctx, a, b, bs)
		lists, cuts := zklock.Written(bs, zklock.OpGetChildren2), zklock.Shortcuts()
		ta := a.Token()
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := zklock.Written(bs, zklock.OpGetChildren2) - lists; n != 0 {
			t.Fatalf("round %d: the waiter listed the queue %d more times after its predecessor's delete", i, n)
		}
		if zklock.Shortcuts() != cuts+1 {
			t.Fatalf("round %d: no shortcut grant", i)
		}
		if tb := b.Token(); tb <= ta {
			t.Fatalf("round %d: token %d after %d", i, tb, ta)
		}
		if err := b.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// The shortcut is not taken when the deleted predecessor was not the only
// node ahead: B waits behind C, which waits behind A's hold; C's deletion
// must not let B in while A holds. (Taking the shortcut on any predecessor
// deletion makes this test fail.)
func TestShortcutNeedsOnlyOneAhead(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 20*time.Second)
	as, bs, cs := connect(t, servers), connect(t, servers), connect(t, servers)
	a, b, c := newLock(t, as, p), newLock(t, bs, p), newLock(t, cs, p)
	cDone := queueBehind(t, ctx, a, c, cs)
	getData := zklock.Written(bs, zklock.OpGetData)
	bDone := make(chan error, 1)
	go func() { bDone <- b.Acquire(ctx) }()
	eventually(t, 10*time.Second, "B's watch", func() bool {
		return zklock.Written(bs, zklock.OpGetData) >= getData+1
	})
	lists := zklock.Written(bs, zklock.OpGetChildren2)
	q := children(t, as.Conn(), p)
	if len(q) != 3 {
		t.Fatalf("queue %v", q)
	}
	// Delete C's node (the middle one) from outside.
	cNodes := nodesOfSession(t, as, p, cs.SessionID())
	if len(cNodes) != 1 {
		t.Fatalf("C's nodes: %v", cNodes)
	}
	if err := as.Conn().Delete(cNodes[0], -1); err != nil {
		t.Fatal(err)
	}
	// B must list again (its predecessor was not the only node ahead),
	// find A ahead, and keep waiting.
	eventually(t, 10*time.Second, "B lists again", func() bool {
		if len(bDone) > 0 {
			t.Fatal("B acquired on C's deletion while A holds")
		}
		return zklock.Written(bs, zklock.OpGetChildren2) > lists
	})
	select {
	case err := <-bDone:
		t.Fatalf("B acquired (%v) while A holds", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// C's Acquire queues again after its node vanished, and gets it.
	if err := <-cDone; err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A data change on the predecessor's node (a revocation request, say)
// fires the waiter's watch but is not a deletion: no shortcut.
func TestShortcutNotOnDataChange(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 20*time.Second)
	as, bs := connect(t, servers), connect(t, servers)
	a, b := newLock(t, as, p), newLock(t, bs, p)
	done := queueBehind(t, ctx, a, b, bs)
	cuts, getData := zklock.Shortcuts(), zklock.Written(bs, zklock.OpGetData)
	if _, err := as.Conn().Set(a.Node(), []byte("__REVOKE__"), -1); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "B watches its predecessor again", func() bool {
		if len(done) > 0 {
			t.Fatal("B acquired on a data change of A's node while A holds")
		}
		return zklock.Written(bs, zklock.OpGetData) > getData
	})
	select {
	case err := <-done:
		t.Fatalf("B acquired (%v) while A holds", err)
	default:
	}
	if zklock.Shortcuts() != cuts {
		t.Fatal("a data change was taken for a deletion")
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A node that leads at once but not alone (another node queued behind it
// before its listing) is granted before its token is known: Token waits
// for the holder's own-node read, a Release ends that wait (Token then
// reports 0), and NodeToken's wait ends with its context.
func TestTokenWaitsForOwnRead(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 20*time.Second)
	as, bs := connect(t, servers), connect(t, servers)
	a, b := newLock(t, as, p), newLock(t, bs, p)
	// The lock path first (its parents' creation would queue behind the
	// held-back listing).
	if err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	listing, reads := make(chan struct{}), make(chan struct{})
	openListing := sync.OnceFunc(func() { close(listing) })
	openReads := sync.OnceFunc(func() { close(reads) })
	defer openReads()
	defer openListing()
	zklock.SetWriteHook(as, func(op int32, _ []byte) error {
		switch op {
		case zklock.OpGetChildren2:
			<-listing
		case zklock.OpGetData:
			<-reads
		}
		return nil
	})
	defer zklock.SetWriteHook(as, nil)
	aDone := make(chan error, 1)
	go func() { aDone <- a.Acquire(ctx) }()
	eventually(t, 10*time.Second, "A's node", func() bool { return len(nodesOfSession(t, bs, p, as.SessionID())) == 1 })
	bDone := make(chan error, 1)
	go func() { bDone <- b.Acquire(ctx) }()
	eventually(t, 10*time.Second, "B's node behind A's", func() bool { return len(nodesOfSession(t, bs, p, bs.SessionID())) == 1 })
	openListing() // A lists [A, B]: it leads, not alone
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := a.NodeToken(short, a.Node())
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NodeToken with the read held back: %v", err)
	}
	tok := make(chan int64, 1)
	go func() { tok <- a.Token() }()
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := <-tok; got != 0 {
		t.Errorf("Token after Release = %d", got)
	}
	openReads()
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	if b.Token() <= 0 {
		t.Fatal("no token")
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// nodesOfSession lists the nodes under p owned by session id.
func nodesOfSession(t *testing.T, s *zklock.Session, p string, id int64) []string {
	t.Helper()
	var out []string
	for _, n := range children(t, s.Conn(), p) {
		_, stat, err := s.Conn().Exists(path.Join(p, n))
		if err == nil && stat != nil && stat.EphemeralOwner == id {
			out = append(out, path.Join(p, n))
		}
	}
	return out
}

// A waiting node deleted by hand, then its predecessor's release: the
// shortcut grants on a node that is gone (nothing in the waiter's view says
// otherwise without a read on the chain), and the hold's own-node watch
// ends the hold with ErrNodeDeleted a round trip later. README states this
// limit; the test pins that the loss is reported and the lock recovers.
func TestShortcutAfterOwnNodeDeletedByHand(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 20*time.Second)
	as, bs := connect(t, servers), connect(t, servers)
	a := newLock(t, as, p)
	b := newLock(t, bs, p, zklock.WithRecheckInterval(time.Hour))
	done := queueBehind(t, ctx, a, b, bs)
	bNodes := nodesOfSession(t, as, p, bs.SessionID())
	if len(bNodes) != 1 {
		t.Fatalf("B's nodes: %v", bNodes)
	}
	if err := as.Conn().Delete(bNodes[0], -1); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Lost():
	case <-ctx.Done():
		t.Fatal("the hold on a node deleted by hand was never reported lost")
	}
	if !errors.Is(b.Err(), zklock.ErrNodeDeleted) {
		t.Fatalf("cause %v, want ErrNodeDeleted", b.Err())
	}
	if err := b.Release(ctx); !errors.Is(err, zklock.ErrLockLost) {
		t.Fatalf("Release of the lost hold: %v", err)
	}
	if err := a.Acquire(ctx); err != nil { // the lock still works
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

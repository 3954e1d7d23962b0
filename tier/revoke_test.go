package tier_test

import (
	"context"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

var isClosed = zktest.IsClosed

// eventLog collects an observer's events.
type eventLog chan tier.Event

func (e eventLog) observe(ev tier.Event) {
	select {
	case e <- ev:
	default:
	}
}

// next returns the next event of kind, failing the test when ctx ends.
func (e eventLog) next(t *testing.T, ctx context.Context, kind tier.EventKind) tier.Event {
	t.Helper()
	for {
		select {
		case ev := <-e:
			if ev.Kind == kind {
				return ev
			}
		case <-ctx.Done():
			t.Fatalf("no %v event: %v", kind, ctx.Err())
		}
	}
}

// A revocation request reaches the holder through Revoked and the
// observer, and nothing else: the held context stays live (re-entered
// holds included) until the holder releases.
func TestRevokeTier(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	events := make(eventLog, 64)
	l := newLock(t, connect(t, servers), p, tier.WithRevocable(), tier.WithObserver(events.observe))
	rs := connect(t, servers)
	ctx := ctxT(t, 20*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(held); err != nil { // re-entered: the same hold
		t.Fatal(err)
	}
	rv := l.Revoked(held)
	if rv == nil || isClosed(rv) {
		t.Fatalf("Revoked = %v before any request", rv)
	}
	if _, err := zklock.RevokeHolder(ctx, rs, p); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rv:
	case <-ctx.Done():
		t.Fatal("revocation not delivered")
	}
	if ev := events.next(t, ctx, tier.Revoked); ev.Path != p || ev.Kind.String() != "revoked" {
		t.Fatalf("event %+v", ev)
	}
	if held.Err() != nil {
		t.Fatalf("a revocation cancelled the held context: %v", context.Cause(held))
	}
	if err := l.Release(held); err != nil {
		t.Fatal(err)
	}
	if held.Err() != nil || !isClosed(l.Revoked(held)) {
		t.Fatalf("after the inner release: err %v", held.Err())
	}
	if err := l.Release(held); err != nil {
		t.Fatal(err)
	}
	if !isClosed(l.Revoked(held)) {
		t.Fatal("Revoked of a released hold is not closed")
	}
}

// Under WithHandoff a revoked node is not handed on: the Release after a
// revocation gives it back to ZooKeeper, and the local waiter queues there
// (a new node, a new token) instead of taking the hold with the node.
func TestRevokeTierNoHandoff(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	events := make(eventLog, 64)
	l := newLock(t, connect(t, servers), p, tier.WithRevocable(), tier.WithHandoff(10, time.Minute), tier.WithObserver(events.observe))
	rs := connect(t, servers)
	ctx := ctxT(t, 20*time.Second)
	first, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events.next(t, ctx, tier.Acquired)
	tok1, _ := l.Token(first)
	second := make(chan context.Context, 1)
	go func() {
		held, err := l.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		second <- held
	}()
	eventually(t, 5*time.Second, "a local waiter at the gate", func() bool { return tier.GateWaiters(l) == 1 })
	if _, err := zklock.RevokeHolder(ctx, rs, p); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Revoked(first):
	case <-ctx.Done():
		t.Fatal("revocation not delivered")
	}
	if err := l.Release(first); err != nil {
		t.Fatal(err)
	}
	held := <-second
	if held == nil {
		t.FailNow()
	}
	ev := events.next(t, ctx, tier.Acquired)
	tok2, _ := l.Token(held)
	if ev.Tier != tier.TierZooKeeper || tok2 <= tok1 {
		t.Fatalf("after a revocation the waiter got the hold by %v with token %d (first %d): the revoked node was handed off", ev.Tier, tok2, tok1)
	}
	if isClosed(l.Revoked(held)) {
		t.Fatal("the new node's hold was born revoked")
	}
	if err := l.Release(held); err != nil {
		t.Fatal(err)
	}
}

// The registry's holds are revocable the same way.
func TestRevokeRegistry(t *testing.T) {
	servers := zktest.Servers(t)
	root := zktest.Path(t)
	r, err := tier.NewRegistry(connect(t, servers), root, tier.WithRevocable())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := ctxT(t, 20*time.Second)
	held, err := r.Acquire(ctx, "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zklock.RevokeHolder(ctx, connect(t, servers), root+"/job-1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Revoked(held):
	case <-ctx.Done():
		t.Fatal("revocation not delivered")
	}
	if held.Err() != nil {
		t.Fatalf("held context cancelled: %v", context.Cause(held))
	}
	if err := r.Release(held); err != nil {
		t.Fatal(err)
	}
	if !isClosed(r.Revoked(held)) {
		t.Fatal("Revoked of a released registry hold is not closed")
	}
}

func TestRevokeTierBadInput(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers)
	ctx := ctxT(t, 20*time.Second)
	var nl *tier.Lock
	var nr *tier.Registry
	plain := newLock(t, s, zktest.Path(t))
	revocable := newLock(t, s, zktest.Path(t), tier.WithRevocable())
	for name, ch := range map[string]<-chan struct{}{
		"nil lock":               nl.Revoked(ctx),
		"nil registry":           nr.Revoked(ctx),
		"nil context":            revocable.Revoked(nil), //nolint:staticcheck // bad input on purpose
		"foreign context":        revocable.Revoked(ctx),
		"plain, foreign context": plain.Revoked(ctx),
	} {
		if !isClosed(ch) {
			t.Errorf("%s: Revoked is not closed", name)
		}
	}
	held, err := plain.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ch := plain.Revoked(held); ch != nil {
		t.Errorf("a lock made without WithRevocable: Revoked = %v, want nil", ch)
	}
	if err := plain.Release(held); err != nil {
		t.Fatal(err)
	}
	// (WithRevocable is a tier.Option: RWLock and Semaphore cannot take it.)
	// Closing a revocable lock that holds gives a closed channel, no panic.
	held, err = revocable.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	revocable.Close()
	if !isClosed(revocable.Revoked(held)) {
		t.Error("Revoked after Close is not closed")
	}
}

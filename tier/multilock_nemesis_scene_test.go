package tier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// The nemesis against a multi-lock hold. Process A holds {x, y, z}: x and y
// on session A, which reaches the server through a fault proxy, z on a
// healthy session of its own (members may live on different sessions).
// Process B, on a direct session, waits for the same set. A fault strikes
// A's connection. Then:
//
//   - A's held context ends, its cause a *MemberError naming x or y and
//     wrapping tier.ErrLockLost, although z was never in danger;
//   - A is told before B's Acquire returns (the loss-before-grant invariant
//     holds for the whole set, not just for the member that was lost);
//   - A, reacting like any holder, releases the set (z goes at once);
//   - B gets the whole set within nemBound, every token above A's;
//   - in the end no node is left under any of the three paths.
//
// "drop" closes A's connection (the client notices at once); "asymmetric"
// throws A's bytes away while the server's still reach A, so only the
// session lease tells A.
func TestMultiLockNemesis(t *testing.T) {
	zktest.TracedStep(t)
	if testing.Short() {
		t.Skip("fault scenarios")
	}
	t.Run("drop", func(t *testing.T) {
		multiNemesis(t, false, func(px *faultproxy.Proxy) { px.DropAll() })
	})
	t.Run("asymmetric", func(t *testing.T) {
		multiNemesis(t, true, func(px *faultproxy.Proxy) { px.BlockUpstream() })
	})
}

func multiNemesis(t *testing.T, chatter bool, fault func(*faultproxy.Proxy)) {
	servers := zktest.Servers(t)
	px := nemProxy(t, servers[0])
	a := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(nemTimeout))
	c := connect(t, servers) // A's healthy session, for z
	b := connect(t, servers)
	obs := connect(t, servers)
	if chatter {
		serverChatter(t, a, obs.Conn(), 40, nemTimeout/10)
	}
	root := zktest.Path(t)
	px1, py, pz := root+"/x", root+"/y", root+"/z"
	ma := newMulti(t, newLock(t, a, px1), newLock(t, a, py), newLock(t, c, pz))
	mb := newMulti(t, newLock(t, b, pz), newLock(t, b, py), newLock(t, b, px1))
	ctx := ctxT(t, 60*time.Second)

	heldA, err := ma.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tokA, err := ma.Tokens(heldA)
	if err != nil {
		t.Fatal(err)
	}
	type grant struct {
		held context.Context
		at   time.Time
		err  error
	}
	granted := make(chan grant, 1)
	go func() {
		h, err := mb.Acquire(ctx)
		granted <- grant{h, time.Now(), err}
	}()
	waitNodes(t, obs.Conn(), map[string]int{px1: 2}, px1) // B queued behind A on x
	beforeNextPing(t, px, nemTimeout)
	fault(px)
	faultAt := time.Now()

	var toldAt time.Time
	select {
	case <-heldA.Done():
		toldAt = time.Now()
	case <-time.After(nemBound):
		t.Fatalf("A's multi-lock hold not ended within %v of the fault", nemBound)
	}
	cause := context.Cause(heldA)
	if me := memberErr(t, cause); (me.Path != px1 && me.Path != py) || !errors.Is(cause, tier.ErrLockLost) {
		t.Fatalf("A's cause %v, want the loss of x or y", cause)
	}
	// A reacts: the set goes back (z's node at once; x's and y's with the
	// session, or when A reconnects).
	if err := ma.Release(heldA); !errors.Is(err, tier.ErrLockLost) {
		t.Errorf("A's Release after the loss: %v, want ErrLockLost", err)
	}
	var g grant
	select {
	case g = <-granted:
	case <-time.After(time.Until(faultAt.Add(nemBound))):
		t.Fatalf("B not granted the set within %v of the fault", nemBound)
	}
	t.Logf("fault at 0: A told at %v (%v), B granted at %v",
		toldAt.Sub(faultAt).Round(time.Millisecond), cause, g.at.Sub(faultAt).Round(time.Millisecond))
	if g.err != nil {
		t.Fatalf("B's Acquire: %v", g.err)
	}
	if !toldAt.Before(g.at) {
		t.Errorf("LOSS AFTER GRANT: B got the set %v before A was told", toldAt.Sub(g.at))
	}
	tokB, err := mb.Tokens(g.held)
	if err != nil {
		t.Fatal(err)
	}
	for p, tok := range tokA {
		if tokB[p] <= tok {
			t.Errorf("%s: B's token %d not above A's %d", p, tokB[p], tok)
		}
	}
	if err := mb.Release(g.held); err != nil {
		t.Errorf("B's Release: %v", err)
	}
	px.Heal()
	a.Close()
	c.Close()
	b.Close()
	assertNoNodes(t, obs.Conn(), px1, py, pz)
}

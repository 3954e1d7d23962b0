package zklock_test

import (
	"context"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// withheldAnswerScene is TestShorterTimeoutAtReconnection's scene with the
// answer on its way (issue 68's last gap): under WithLossOnExpiryOnly, A,
// granted T1 by f1, holds the lock; its connection moves to f2, which
// grants T2 < T1, and whose connect answer the dialer withholds (then it
// refuses every dial); f1 is cut from its peers. f2's
// REVALIDATE re-arms A's expiry at the leader to T2 after it before A can
// know of T2; the leader expires A, and B, on the leader, is granted. A
// must be told first, or at most T2/8 after (the policy's overlap). The
// lease before this scene kept the deadline earned under T1 while the
// answer was on its way (9T1/8 after A's last touch): B was granted
// seconds before A was told (TIERLOCK_MUTANT=untold-grant-ignored, built
// with -tags tierlockmutants). The lease now bounds the deadline, while a
// reconnection's grant is untold, by 9/8 of the least timeout a member
// can grant (2 ticks: the probe's read of f1) past the connection to f2.
func withheldAnswerScene(t *testing.T, ctx context.Context, c *zkserver.Cluster, wrap bool,
	leader, f1, f2 int, T1, T2 time.Duration) sceneResult {
	var r sceneResult
	d := &steeredDialer{allow: c.Addr(f1)}
	a := steeredSession(t, d, []string{c.Addr(f1), c.Addr(f2)}, wrap, true, T1)
	b := connect(t, []string{c.Addr(leader)}, zklock.WithSessionTimeout(T2))
	path := zktest.Path(t)
	la, lb := newLock(t, a, path), newLock(t, b, path)
	eventually(t, 10*time.Second, "A granted T1", func() bool { return a.LeaseStats().Timeout == T1 })
	h, err := la.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.aGranted = time.Now()
	defer func() { _ = h.Release() }()
	// f1 is cut from its peers first: the touches of A's last packets to
	// f1, which f1 reports at the leader's next ping with T1, would re-arm
	// A's expiry after f2's REVALIDATE (seen: the leader expired A T1 after
	// its last packet to f1). Then the connection to f1 drops; f2's answer
	// to A's connect never reaches A, and no server is reached after it:
	// the leader expires A T2 after f2's REVALIDATE.
	if err := c.PartitionMember(f1); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.HealMember(f1) }()
	time.Sleep(time.Second) // the cut in place before A's last packet to f1
	d.moveTo(c.Addr(f2), true)
	r.stalled = time.Now()
	r.bGrantedALost(t, ctx, lb, h, T1+T2)
	d.moveTo(c.Addr(f2), false) // A's client may learn its session's end: its Close need not wait out refused dials
	return r
}

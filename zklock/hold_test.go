package zklock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The hold (hold.go): its own-node watch, its loss, its release.

// The holder's watch on its own node survives a failed write: a deletion
// by someone else is still noticed. Before: the GetW error made the watch
// goroutine return, and the deletion went unnoticed (Lost never closed).
func TestFailedWriteOfOwnWatchIsRetried(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a failed watch and a reconnection, about 2 s")
	}
	servers := zktest.Servers(t)
	// The failed write drops the connection; under the default policy that
	// alone ends the hold. Keep the hold through it to see the watch.
	s := connect(t, servers, zklock.WithLossOnExpiryOnly())
	admin := connect(t, servers)
	p := zktest.Path(t)
	l := newLock(t, s, p)
	ctx := ctxT(t, 20*time.Second)
	fired := failOnce(s, zklock.OpGetData, p+"/")
	defer zklock.SetWriteHook(s, nil)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A hold that is not revocable arms its own-node watch once it has
	// lasted the lease's bound (3/4 of the 4 s session timeout under
	// WithLossOnExpiryOnly), so the failed write comes that much later.
	eventually(t, 10*time.Second, "the own-node watch's write failed", fired.Load)
	// Give the watch time to be set again after the reconnect, then delete.
	eventually(t, 10*time.Second, "the own-node watch set", func() bool { return watchersOf(t, h.Node()) == 1 })
	if err := admin.Conn().Delete(h.Node(), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("deletion of the held node not noticed after the watch's write failed")
	}
	if err := h.Err(); !errors.Is(err, zklock.ErrNodeDeleted) && !errors.Is(err, zklock.ErrDisconnected) {
		t.Fatalf("Err = %v, want ErrNodeDeleted", err)
	}
}

// Every way a hold ends behind its holder's back closes Lost and sets Err
// (issue 37, item 1). Lock.Close used to end a live hold with Release,
// which closes neither: the node went, another session was granted the
// lock (a greater token), and the first holder, watching Lost as
// documented, went on working beside it. Now Close ends the hold as lost,
// with cause ErrClosed, before the next holder can be granted; a Release
// after it says so (not ErrNotHeld), and the loss handler is told.
func TestLockCloseEndsTheHoldAsLost(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 20*time.Second)
	told := make(chan error, 1)
	a := newLock(t, connect(t, servers), p, zklock.WithLossHandler(func(_ string, cause error) { told <- cause }))
	b := newLock(t, connect(t, servers), p)
	ha, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting := goAcquire(ctx, b)
	eventually(t, 10*time.Second, "b queued behind a", func() bool { return len(children(t, a.Session().Conn(), p)) == 2 })
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !zktest.IsClosed(ha.Lost()) {
		t.Fatal("Lost() still open once Close has returned: the holder cannot tell its hold ended")
	}
	if err := ha.Err(); !errors.Is(err, zklock.ErrLockLost) || !errors.Is(err, zklock.ErrClosed) {
		t.Fatalf("Err() = %v, want ErrLockLost and ErrClosed", err)
	}
	select {
	case cause := <-told:
		if !errors.Is(cause, zklock.ErrClosed) {
			t.Fatalf("loss handler told %v, want ErrClosed", cause)
		}
	default:
		t.Fatal("the loss handler was not told before Close returned")
	}
	got := <-waiting
	if got.err != nil {
		t.Fatal(got.err)
	}
	defer got.h.Release()
	if got.h.Token() <= ha.Token() {
		t.Fatalf("next token %d, want > %d", got.h.Token(), ha.Token())
	}
	if err := ha.Release(); !errors.Is(err, zklock.ErrLockLost) || !errors.Is(err, zklock.ErrClosed) {
		t.Fatalf("Release after Close = %v, want ErrLockLost and ErrClosed", err)
	}
	if err := ha.Release(); !errors.Is(err, zklock.ErrNotHeld) {
		t.Fatalf("second Release = %v, want ErrNotHeld", err)
	}
}

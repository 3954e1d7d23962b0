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

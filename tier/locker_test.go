package tier_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// The sync.Locker adapter (locker.go).

// Regression tests for issue 9's smaller defects in tier.

// The sync.Locker adapter no longer hides a loss: the holder can see it
// through Context and Err. Before: the held context was discarded, and a
// lost holder had no way to learn of it.
func TestLockerReportsLoss(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers)
	admin := connect(t, servers)
	p := zktest.Path(t)
	l := newLock(t, s, p)
	k := l.Locker()
	if err := k.Err(); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("Err outside a hold = %v, want ErrNotHolder", err)
	}
	k.Lock()
	if err := k.Err(); err != nil {
		t.Fatalf("Err while held = %v", err)
	}
	kids := children(t, admin.Conn(), p)
	if len(kids) != 1 {
		t.Fatalf("%d nodes, want 1", len(kids))
	}
	if err := admin.Conn().Delete(p+"/"+kids[0], -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-k.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Locker's context not cancelled when the node was deleted")
	}
	if err := k.Err(); !errors.Is(err, tier.ErrLockLost) || !errors.Is(err, zklock.ErrNodeDeleted) {
		t.Fatalf("Err after loss = %v, want ErrLockLost wrapping ErrNodeDeleted", err)
	}
	k.Unlock()
	if k.Context().Err() == nil {
		t.Fatal("Context outside a hold is not cancelled")
	}
}

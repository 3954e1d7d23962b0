package tier_test

import (
	"errors"
	"testing"

	"github.com/tierlock/tierlock/internal/nilcheck"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
)

// Issue 21, item 7: one convention for methods on nil pointers, applied to
// every type: no panic, an error when the method returns one.
func TestNilReceivers(t *testing.T) {
	nilcheck.Methods(t, (*tier.Lock)(nil), (*tier.Registry)(nil), (*tier.RWLock)(nil), (*tier.RWRegistry)(nil),
		(*tier.Semaphore)(nil), (*tier.SemaphoreRegistry)(nil), (*tier.MultiLock)(nil), (*tier.Locker)(nil))
}

// The sync.Locker adapter keeps the convention too: Lock on a closed lock
// cannot hold, so it returns at once (instead of panicking, as it did),
// with Context cancelled and Err saying why.
func TestLockerOnClosedLock(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	l := newLock(t, s, zktest.Path(t))
	l.Close()
	k := l.Locker()
	k.Lock()
	if err := k.Err(); !errors.Is(err, tier.ErrClosed) {
		t.Errorf("Err after Lock on a closed lock: %v; want ErrClosed", err)
	}
	if k.Context().Err() == nil {
		t.Error("Context not cancelled after a Lock that could not hold")
	}
	k.Unlock()
	if err := k.Err(); !errors.Is(err, tier.ErrNotHolder) {
		t.Errorf("Err after Unlock: %v; want ErrNotHolder", err)
	}
}

package zklock_test

import (
	"testing"

	"github.com/tierlock/tierlock/internal/nilcheck"
	"github.com/tierlock/tierlock/zklock"
)

// Issue 21, item 7: one convention for methods on nil pointers, applied to
// every type: no panic, an error when the method returns one.
func TestNilReceivers(t *testing.T) {
	nilcheck.Methods(t, (*zklock.Session)(nil), (*zklock.Lock)(nil), (*zklock.Hold)(nil), (*zklock.RWLock)(nil),
		(*zklock.Semaphore)(nil), (*zklock.Lease)(nil))
}

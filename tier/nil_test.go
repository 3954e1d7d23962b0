package tier_test

import (
	"testing"

	"github.com/tierlock/tierlock/internal/nilcheck"
	"github.com/tierlock/tierlock/tier"
)

// Issue 21, item 7: one convention for methods on nil pointers, applied to
// every type: no panic, an error when the method returns one.
func TestNilReceivers(t *testing.T) {
	nilcheck.Methods(t, (*tier.Lock)(nil), (*tier.Registry)(nil), (*tier.RWLock)(nil), (*tier.RWRegistry)(nil),
		(*tier.Semaphore)(nil), (*tier.SemaphoreRegistry)(nil), (*tier.MultiLock)(nil), (*tier.Locker)(nil))
}

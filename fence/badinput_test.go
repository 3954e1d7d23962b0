package fence_test

import (
	"testing"

	"github.com/tierlock/tierlock/fence"
	"github.com/tierlock/tierlock/internal/nilcheck"
)

// Methods on nil pointers do not panic (the module's convention).
func TestNilReceivers(t *testing.T) {
	nilcheck.Methods(t, (*fence.Fence)(nil), (*fence.Keyed[string])(nil))
}

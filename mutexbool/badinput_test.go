package mutexbool_test

import (
	"testing"

	"github.com/tierlock/tierlock/internal/nilcheck"
	"github.com/tierlock/tierlock/mutexbool"
)

// Methods on a nil *BooleanMutex do not panic (the module's convention).
func TestNilReceivers(t *testing.T) { nilcheck.Methods(t, (*mutexbool.BooleanMutex)(nil)) }

package zklock_test

import (
	"errors"
	"testing"

	"github.com/tierlock/tierlock/zklock"
)

// TestNilLockError checks that a nil *Lock's error names it and still
// matches ErrNilSession, which nil locks reported before it existed.
func TestNilLockError(t *testing.T) {
	t.Run("names the type", func(t *testing.T) {
		if got, want := zklock.ErrNilLock.Error(), "zklock: nil *Lock"; got != want {
			t.Errorf("message %q, want %q", got, want)
		}
	})
	t.Run("matches ErrNilSession", func(t *testing.T) {
		if !errors.Is(zklock.ErrNilLock, zklock.ErrNilSession) {
			t.Error("errors.Is(ErrNilLock, ErrNilSession) = false")
		}
	})
	t.Run("ErrNilSession does not match ErrNilLock", func(t *testing.T) {
		if errors.Is(zklock.ErrNilSession, zklock.ErrNilLock) {
			t.Error("errors.Is(ErrNilSession, ErrNilLock) = true")
		}
	})
}

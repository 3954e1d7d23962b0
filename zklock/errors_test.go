package zklock_test

import (
	"errors"
	"testing"

	"github.com/tierlock/tierlock/zklock"
)

// A method on a nil pointer returns an error that names the type and
// matches ErrNil; a nil argument (a session, a connection) is another
// error, ErrNilSession.
func TestNilError(t *testing.T) {
	var l *zklock.Lock
	err := l.Close()
	if got, want := err.Error(), "zklock: nil *Lock"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if !errors.Is(err, zklock.ErrNil) {
		t.Errorf("errors.Is(%v, ErrNil) = false", err)
	}
	if errors.Is(err, zklock.ErrNilSession) || errors.Is(zklock.ErrNilSession, zklock.ErrNil) {
		t.Error("a nil receiver and a nil argument are told apart")
	}
}

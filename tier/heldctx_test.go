package tier_test

import (
	"context"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
)

// The held context ends with the hold, not with the context given to
// Acquire (README's first rule): cancelling that one leaves the hold, its
// context and its token alone, and Release still ends it.
func TestHeldOutlivesAcquireContext(t *testing.T) {
	l := newLock(t, connect(t, zktest.Servers(t)), zktest.Path(t))
	ctx, cancel := context.WithCancel(context.Background())
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	time.Sleep(50 * time.Millisecond)
	if err := held.Err(); err != nil {
		t.Fatalf("the held context ended with Acquire's: %v", err)
	}
	if _, err := l.Token(held); err != nil {
		t.Fatalf("Token after Acquire's context ended: %v", err)
	}
	if err := l.Release(held); err != nil {
		t.Fatal(err)
	}
	if held.Err() == nil {
		t.Fatal("Release left the held context open")
	}
}

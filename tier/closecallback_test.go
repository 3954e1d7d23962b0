package tier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// Closing from the callbacks that run user code (issue 37, item 4): an
// observer that closes its lock when the lock is lost, as a program that
// stops on loss does. Close waited for the observer's notifications in
// progress, one of which was its caller: it never returned, and every
// other Close hung behind it. Now Close waits for no callback in progress.
func TestCloseFromObserver(t *testing.T) {
	servers := zktest.Servers(t)
	px, err := faultproxy.New(servers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	s := connect(t, []string{px.Addr()})
	var l *tier.Lock
	closed := make(chan error, 1)
	ready := make(chan struct{})
	l = newLock(t, s, zktest.Path(t), tier.WithObserver(func(ev tier.Event) {
		if ev.Kind == tier.Lost {
			<-ready
			closed <- l.Close()
		}
	}))
	close(ready)
	held, err := l.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	px.DropAll()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close from the observer: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close called from the observer has not returned")
	}
	if cause := context.Cause(held); !errors.Is(cause, tier.ErrLockLost) {
		t.Fatalf("held context ended by %v, want ErrLockLost", cause)
	}
	done := make(chan struct{})
	go func() {
		_ = l.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a second Close hangs behind the observer's")
	}
	if _, err := l.Acquire(context.Background()); !errors.Is(err, tier.ErrClosed) {
		t.Fatalf("Acquire after Close: %v, want ErrClosed", err)
	}
	_ = zklock.ErrClosed
}

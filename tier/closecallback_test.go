package tier_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
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
}

// The storm (issue 37, item 4): in each round a session with a state
// listener that closes the session on StateDisconnected, and three locks
// with hand-off whose observers close their lock on a loss, while eight
// goroutines acquire and release them, an operator deletes held nodes,
// and the connection is dropped at a random moment. Every round ends (the
// goroutines return, a last Close of each returns) within its deadline,
// and nothing is left running (goleak, in TestMain).
func TestCloseFromCallbacksStorm(t *testing.T) {
	servers := zktest.Servers(t)
	admin := connect(t, servers)
	root := zktest.Path(t)
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	for round := range rounds {
		closeStormRound(t, servers, admin, fmt.Sprintf("%s/r%d", root, round))
	}
}

func closeStormRound(t *testing.T, servers []string, admin *zklock.Session, root string) {
	px, err := faultproxy.New(servers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	var s *zklock.Session
	sessionSet := make(chan struct{})
	s = connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(4*time.Second),
		zklock.WithStateListener(func(st zklock.State) {
			<-sessionSet
			if st == zklock.StateDisconnected {
				_ = s.Close()
			}
		}))
	close(sessionSet)
	locks := make([]*tier.Lock, 3)
	for i := range locks {
		set := make(chan struct{})
		locks[i] = newLock(t, s, fmt.Sprintf("%s/l%d", root, i), tier.WithHandoff(4, time.Second),
			tier.WithObserver(func(ev tier.Event) {
				if ev.Kind == tier.Lost {
					<-set
					_ = locks[i].Close()
				}
			}))
		close(set)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := locks[g%len(locks)]
			for ctx.Err() == nil {
				held, err := l.Acquire(ctx)
				if err != nil {
					if errors.Is(err, tier.ErrClosed) || errors.Is(err, zklock.ErrSessionClosed) || ctx.Err() != nil {
						return
					}
					continue
				}
				time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
				_ = l.Release(held)
			}
		}()
	}
	// Losses: an operator's deletes of the held nodes, then the drop.
	time.Sleep(time.Duration(50+rand.IntN(150)) * time.Millisecond)
	for i := range locks {
		for _, kid := range zktest.Children(t, admin.Conn(), fmt.Sprintf("%s/l%d", root, i)) {
			_ = admin.Conn().Delete(fmt.Sprintf("%s/l%d/%s", root, i, kid), -1)
		}
	}
	time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
	px.DropAll()
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		for _, l := range locks {
			_ = l.Close()
		}
		_ = s.Close()
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("a round did not end: an acquisition or a Close hangs")
	}
}

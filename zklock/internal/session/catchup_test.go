package session

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestCatchUpNotOvertaken: once zk.Connect returns, Dial applies the
// connection's state (catchUp), the events before it having been
// ignored. go-zookeeper stores a state, then calls the event callback.
// Here its handshake ends right after catchUp read the state: catchUp
// holds a TCP state (Connected, no session yet) while the callback
// applies the first session. Applied after the callback, the stale state
// took the new session for a lost connection, and for good: no event came
// to correct it, and acquisitions waited for a connection that was up (a
// loaded make test: zklock.TestConcurrentSessionClose's Acquire waited
// 10 s with "no connection to ZooKeeper since" the moment it began, and
// cmd/tierlock's TestBreak waited 10 s for a waiter's node).
func TestCatchUpNotOvertaken(t *testing.T) {
	c := &handshakingConn{}
	c.sid.Store(0x101)
	c.state.Store(int32(zk.StateConnected)) // TCP up, the handshake under way
	s := newFloor(nil, false, Config{Timeout: 4 * time.Second, Logger: slog.New(slog.DiscardHandler),
		MaxRetryWait: time.Second})
	s.start(c, nil)
	defer s.Close()
	told := make(chan struct{})
	c.afterRead = func() {
		go func() { // go-zookeeper's connection goroutine
			defer close(told)
			c.state.Store(int32(zk.StateHasSession))
			s.st.onEvent(zk.Event{Type: zk.EventSession, State: zk.StateHasSession})
		}()
		// The callback runs at once, unless catchUp holds what it needs.
		select {
		case <-told:
		case <-time.After(200 * time.Millisecond):
		}
	}
	s.st.catchUp()
	<-told
	if got := s.State(); got != StateConnected {
		t.Fatalf("state %d after the first session's event and the catch-up, want connected (%d)", got, StateConnected)
	}
	if since := s.out.began(); !since.IsZero() {
		t.Fatalf("an outage begun at %v, with the session connected", since)
	}
}

// handshakingConn is a connection whose first State read runs afterRead
// after it reads: the moment a concurrent event can come.
type handshakingConn struct {
	polledConn
	once      sync.Once
	afterRead func()
}

func (c *handshakingConn) State() zk.State {
	st := zk.State(c.state.Load())
	c.once.Do(func() {
		if c.afterRead != nil {
			c.afterRead()
		}
	})
	return st
}

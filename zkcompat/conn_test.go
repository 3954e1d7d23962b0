package zkcompat_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// conn connects a go-zookeeper client, as a caller of zk.Lock has one, and
// ends the drop-in's use of it and the connection when the test ends.
func conn(t *testing.T) *zk.Conn {
	t.Helper()
	return connTo(t, zktest.Servers(t), 4*time.Second)
}

// connTo is conn on servers with the given session timeout.
func connTo(t *testing.T, servers []string, timeout time.Duration) *zk.Conn {
	t.Helper()
	c, _ := connLoop(t, servers, timeout)
	return c
}

// connLoop is connTo, also returning a channel closed once go-zookeeper's
// loop has ended (it closes its events channel then). The cleanup waits
// for that, bounded (zktest.AwaitClosed).
func connLoop(t *testing.T, servers []string, timeout time.Duration) (*zk.Conn, <-chan struct{}) {
	t.Helper()
	c, events, err := zk.Connect(servers, timeout, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	ended := zktest.DrainEvents(events)
	zktest.Eventually(t, 10*time.Second, "a session", func() bool { return c.State() == zk.StateHasSession })
	t.Cleanup(func() {
		zkcompat.CloseConn(c)
		c.Close()
		zktest.AwaitClosed(t, "the end of go-zookeeper's loop (its events channel closed)", ended)
	})
	return c, ended
}

// closable is conn, with a close that returns once go-zookeeper's loop has
// ended: a connection then closed for good, on which no request is ever
// written. A request made right after Close may still be written while the
// loop ends; one whose write then fails can leave go-zookeeper v1.0.4's
// loop blocked for good (see docs/operations.md), a hang of go-zookeeper's
// that only zkhang_test.go's tests provoke.
func closable(t *testing.T) (c *zk.Conn, closeConn func()) {
	t.Helper()
	c, ended := connLoop(t, zktest.Servers(t), 4*time.Second)
	return c, func() {
		c.Close()
		zktest.AwaitClosed(t, "the end of go-zookeeper's loop after Close", ended)
	}
}

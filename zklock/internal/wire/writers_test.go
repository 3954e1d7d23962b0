package wire

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// oneWriter is a dialer's connection that asserts its caller: it takes
// one Write at a time, as a connection need not take two (the stress
// command's counting connection, which parses the stream, raced in loaded
// make test run 144). Each Write lingers a moment, so that a second
// writer, if the tap lets one through, meets the first.
type oneWriter struct {
	net.Conn
	in, most atomic.Int32
}

func (c *oneWriter) Write(b []byte) (int, error) {
	n := c.in.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	time.Sleep(200 * time.Microsecond)
	defer c.in.Add(-1)
	return c.Conn.Write(b)
}

// The tap's own requests (Call: the listings' multiRead) and
// go-zookeeper's send loop write to one connection one at a time: a write
// at once marks the connection flushing, and the other's bytes queue
// behind it. Before, both could find nothing queued and write to the
// socket side by side.
func TestCallAndSendLoopWriteOneAtATime(t *testing.T) {
	p := newPeer(t)
	var conns []*oneWriter
	var mu sync.Mutex
	tap := New(Config{Dial: func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := p.dial(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		w := &oneWriter{Conn: c}
		mu.Lock()
		conns = append(conns, w)
		mu.Unlock()
		return w, nil
	}})
	conn, _, err := zk.Connect([]string{"127.0.0.1:2181"}, 4*time.Second, zk.WithDialer(tap.Dialer()), zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		conn.Close()
		p.drop()
	}()
	for deadline := time.Now().Add(5 * time.Second); tap.live.Load() == nil; {
		if time.Now().After(deadline) {
			t.Fatal("no session with the peer in 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				_, _, _ = conn.Get("/a")
			}
		})
		wg.Go(func() {
			for range 20 {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				_, _ = tap.Call(ctx, OpMultiRead, AppendListings(nil, []string{"/a"}))
				cancel()
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i, c := range conns {
		if m := c.most.Load(); m > 1 {
			t.Errorf("connection %d: %d writes at once, want one at a time", i, m)
		}
	}
}

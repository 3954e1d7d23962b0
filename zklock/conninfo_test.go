package zklock_test

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// TestConnInternals pins what a session made by NewSession reads from the
// caller's connection (conninfo.go): should a go-zookeeper upgrade rename
// or retype those fields, this fails instead of the loss bounds silently
// falling back to a timeout the server may not have granted.
func TestConnInternals(t *testing.T) {
	servers := zktest.Servers(t)
	for _, asked := range []time.Duration{3 * time.Second, 10 * time.Minute} {
		conn, _, err := zk.Connect(servers, asked, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "a session", func() bool { return conn.State() == zk.StateHasSession })
		got := zklock.GrantedTimeout(conn)
		switch {
		case got <= 0:
			t.Errorf("asked %v: the granted timeout cannot be read from the connection", asked)
		case asked == 3*time.Second && got != asked:
			t.Errorf("asked %v: read %v; the server grants what is asked within its bounds", asked, got)
		case asked > 3*time.Second && got >= asked:
			t.Errorf("asked %v: read %v; the server's bound (at most minutes) must clamp it", asked, got)
		}
		t.Logf("asked %v, granted %v", asked, got)
		quit := zklock.ConnQuit(conn)
		if quit == nil {
			t.Fatal("the connection's closing signal cannot be read")
		}
		if zktest.IsClosed(quit) {
			t.Error("closing signal closed on a live connection")
		}
		conn.Close()
		if !zktest.IsClosed(quit) {
			t.Error("closing signal still open after Close")
		}
	}
}

// TestGrantedTimeoutReadsBesideReconnections reads the granted timeout
// without pause while go-zookeeper reconnects every few milliseconds,
// each connection's handshake writing the field again. Under the race
// detector it fails on a read that does not hold go-zookeeper's serverMu
// (the floor's poll of make test run 72); elsewhere it checks that each
// read is one the server granted.
func TestGrantedTimeoutReadsBesideReconnections(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 2 s of reconnections")
	}
	const asked = 4 * time.Second
	var mu sync.Mutex
	var last net.Conn
	dial := func(network, addr string, d time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, d)
		mu.Lock()
		last = c
		mu.Unlock()
		return c, err
	}
	conn, events, err := zk.Connect(zktest.Servers(t), asked, zk.WithDialer(dial),
		zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range events {
		}
	}()
	defer conn.Close()
	eventually(t, 10*time.Second, "a session", func() bool { return conn.State() == zk.StateHasSession })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // cut the connection whenever it has a session
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
			}
			if conn.State() == zk.StateHasSession {
				mu.Lock()
				if last != nil {
					last.Close()
				}
				mu.Unlock()
			}
		}
	}()
	var reads, sessions int
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		switch got := zklock.GrantedTimeout(conn); got {
		case 0:
		case asked:
			sessions++
		default:
			t.Fatalf("read %v, granted %v", got, asked)
		}
		reads++
	}
	close(stop)
	zktest.Wait(t, "the connection cutter", &wg)
	t.Logf("%d reads, %d in a session", reads, sessions)
	if sessions == 0 {
		t.Error("no read found the session")
	}
}

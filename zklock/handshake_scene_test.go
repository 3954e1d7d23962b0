package zklock_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// A server that accepts the session's connection and never answers its
// handshake (a ZooKeeper 3.8.0 whose start failed left its accepted
// sockets so, issue 68) holds the session for at most two thirds of its
// timeout: go-zookeeper then dials the next server, which serves, and the
// log says which server took the connection and stayed silent, and for
// how long. go-zookeeper v1.0.4 alone waits 10 × 2T/3 for the answer (27
// s with T = 4 s, longer than Connect's 20 s here), and nothing told of
// it: the log was silent, Connect's error said only its deadline.
func TestUnansweredHandshakeMovesOn(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out a silent server's handshake, about 3 s")
	}
	const timeout = 4 * time.Second
	const bound = timeout * 2 / 3 // what a handshake is given (wire's answerBound)
	servers := zktest.Servers(t)
	addrs, silent := silentFirst(t)
	buf := &zktest.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	defer func() {
		if t.Failed() {
			t.Logf("logged:\n%s", buf)
		}
	}()
	type connected struct {
		s   *zklock.Session
		err error
	}
	done := make(chan connected, 1)
	start := time.Now()
	go func() {
		// Bounded: an old go-zookeeper's handshake read outlasts it.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		s, err := zklock.Connect(ctx, addrs, zklock.WithSessionTimeout(timeout), zklock.WithLogger(log))
		done <- connected{s, err}
	}()
	var stuck string
	select {
	case stuck = <-silent:
	case <-time.After(15 * time.Second):
		t.Fatal("no server dialed")
	}
	other := addrs[0]
	if other == stuck {
		other = addrs[1]
	}
	proxyAt(t, servers[0], other) // the other address serves from now on
	c := <-done                   // within Connect's bound
	took := time.Since(start)
	if c.err != nil {
		t.Fatalf("no session after %v with %s silent (a handshake is given %v): %v", took.Round(time.Millisecond), stuck, bound, c.err)
	}
	defer c.s.Close()
	if took < bound {
		t.Errorf("session after %v: the silent server's answer was not waited for (%v)", took, bound)
	}
	want := "connected to " + stuck + ", no answer to the handshake after "
	begun := logLines(t, buf, "no connection to ZooKeeper")
	ended := logLines(t, buf, "connected to ZooKeeper")
	if len(begun) != 1 || !strings.HasPrefix(begun[0]["cause"].(string), want) {
		t.Errorf("outage's begin line %v; want one, cause %q…", begun, want)
	}
	if len(ended) != 1 || ended[0]["failed_dials"] != float64(1) {
		t.Fatalf("outage's end line %v; want one, failed_dials 1", ended)
	}
	if got, _ := ended[0]["last_dial_error"].(string); !strings.HasPrefix(got, want) {
		t.Errorf("end line's last_dial_error %q; want %q…", got, want)
	}
}

// A Connect that ends while its server has taken the connection and not
// answered says so: the old error said only "context deadline exceeded",
// the dial having worked, and a refused dial before it would have been
// blamed.
func TestConnectErrorNamesTheSilentServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out a silent server, about 2 s")
	}
	addrs, silent := silentFirst(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second) // less than the bound, 2.67 s
	defer cancel()
	_, err := zklock.Connect(ctx, addrs[:1], zklock.WithSessionTimeout(4*time.Second), zklock.WithLogger(quietLog))
	select {
	case <-silent:
	default:
		t.Fatalf("Connect returned %v before dialing", err)
	}
	want := "(last dial error: connected to " + addrs[0] + ", no answer to the handshake after "
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Connect: %v; want %q…", err, want)
	}
}

// silentFirst listens on two loopback addresses, and the first connection
// made to either is accepted and never answered, as every later one to
// that address; the other address's listener is closed then, for the test
// to serve there. go-zookeeper shuffles the servers it is given, so the
// silent one is whichever it dials first: silent receives its address.
func silentFirst(t *testing.T) (addrs []string, silent <-chan string) {
	t.Helper()
	var lns [2]net.Listener
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		addrs = append(addrs, ln.Addr().String())
	}
	first := make(chan string, 1)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		held []net.Conn
		once sync.Once
	)
	for i, ln := range lns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return // closed
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
				once.Do(func() {
					lns[1-i].Close()
					first <- addrs[i]
				})
			}
		}()
	}
	t.Cleanup(func() {
		for _, ln := range lns {
			ln.Close()
		}
		zktest.Wait(t, "the accept loops", &wg)
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close() // a client still waiting for an answer reads the end
		}
	})
	return addrs, first
}

package wire

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// connectRequest frames go-zookeeper's connect request asking for timeout.
func connectRequest(timeout time.Duration) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0) // length, set below
	b = binary.BigEndian.AppendUint32(b, 0)    // protocol version
	b = binary.BigEndian.AppendUint64(b, 0)    // last zxid seen
	b = binary.BigEndian.AppendUint32(b, uint32(timeout.Milliseconds()))
	b = binary.BigEndian.AppendUint64(b, 0) // session id
	b = binary.BigEndian.AppendUint32(b, 16)
	b = append(b, make([]byte, 16)...) // password
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// connectAnswer frames a server's answer granting timeout to session 1.
func connectAnswer(timeout time.Duration) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(timeout.Milliseconds()))
	b = binary.BigEndian.AppendUint64(b, 1)
	b = binary.BigEndian.AppendUint32(b, 16)
	b = append(b, make([]byte, 16)...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// server listens on loopback and hands each connection it accepts to
// serve (which must return), closing them all at the test's end.
func server(t *testing.T, serve func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var conns []net.Conn // the accepting goroutine's, until it ends
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			serve(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// A server that accepts the connection and never answers the connect
// request has two thirds of the session timeout asked to answer, whatever
// deadline go-zookeeper sets (10 times that): the read then fails, and
// the tap says what happened, to OnDial (after the dial's own nil) and in
// LastDialErr: connected to the server, no answer, for how long. The old
// tap passed go-zookeeper's deadline on, a minute here.
func TestUnansweredHandshakeGivenUp(t *testing.T) {
	addr := server(t, func(net.Conn) {}) // accepted, never answered
	var mu sync.Mutex
	var told []error
	tap := New(Config{OnDial: func(_ string, err error) {
		mu.Lock()
		told = append(told, err)
		mu.Unlock()
	}})
	c, err := tap.Dialer()("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const timeout = 600 * time.Millisecond
	if _, err := c.Write(connectRequest(timeout)); err != nil {
		t.Fatal(err)
	}
	var pending *UnansweredError
	if err := tap.LastDialErr(); !errors.As(err, &pending) || pending.Addr != addr {
		t.Fatalf("awaiting the answer, LastDialErr %v; want an UnansweredError naming %s", err, addr)
	}
	start := time.Now()
	c.SetReadDeadline(start.Add(time.Minute)) // go-zookeeper's: 10 × 2T/3
	_, err = io.ReadFull(c, make([]byte, 4))
	took := time.Since(start)
	if !errors.Is(err, os.ErrDeadlineExceeded) || took > 30*time.Second {
		t.Fatalf("read %v after %v; want a deadline error after about %v", err, took, timeout*2/3)
	}
	var given *UnansweredError
	if err := tap.LastDialErr(); !errors.As(err, &given) || given.Addr != addr || given.After < timeout*2/3 {
		t.Fatalf("LastDialErr %v; want an UnansweredError naming %s, after %v at least", err, addr, timeout*2/3)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 2 || told[0] != nil || !errors.As(told[1], &given) {
		t.Fatalf("OnDial told %v; want nil, then the unanswered handshake", told)
	}
	if tap.Unanswered() != nil {
		t.Fatalf("still awaiting: %v", tap.Unanswered())
	}
}

// Once the connect answer is read, go-zookeeper's deadlines are the
// socket's again, and nothing is awaited nor told.
func TestAnsweredHandshakeKeepsTheDeadlines(t *testing.T) {
	const timeout = 600 * time.Millisecond
	addr := server(t, func(c net.Conn) {
		if _, err := io.ReadFull(c, make([]byte, len(connectRequest(timeout)))); err == nil {
			c.Write(connectAnswer(timeout))
		}
	})
	var told []error // OnDial runs on the dialing goroutine, this one
	tap := New(Config{OnDial: func(_ string, err error) { told = append(told, err) }})
	c, err := tap.Dialer()("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(connectRequest(timeout)); err != nil {
		t.Fatal(err)
	}
	answer := make([]byte, len(connectAnswer(timeout)))
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.ReadFull(c, answer); err != nil {
		t.Fatal(err)
	}
	far := time.Now().Add(time.Hour)
	c.SetReadDeadline(far)
	if got := c.(*tappedConn).rdeadline; !got.Equal(far) {
		t.Fatalf("read deadline %v after the answer; want go-zookeeper's, %v", got, far)
	}
	if err := tap.LastDialErr(); err != nil || len(told) != 1 || told[0] != nil {
		t.Fatalf("answered: LastDialErr %v, OnDial told %v; want nil, and nil once", err, told)
	}
}

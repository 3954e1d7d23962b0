package wire

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"
)

// When every server has refused TLS, Refused is closed and RefusedErr
// already says why: Connect reads it as soon as the channel closes, on
// another goroutine than the dial's. (When Refused was closed before the
// dial's error was stored, TestTLS/refused_at_once in package zklock read
// a nil error in 2 of its 3 cases, under -race, on a loaded machine.)
// Here a peer that answers the handshake with something else than TLS,
// 500 times, each with a reader waiting on Refused.
func TestRefusedCarriesItsError(t *testing.T) {
	for range 500 {
		tap := New(Config{TLS: &tls.Config{}, Dial: func(string, string, time.Duration) (net.Conn, error) {
			near, far := net.Pipe()
			go func() {
				go io.Copy(io.Discard, far) // the ClientHello
				far.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\n"))
				far.Close()
			}()
			return near, nil
		}})
		if err := tap.HostProvider().Init([]string{"127.0.0.1:2281"}); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			<-tap.Refused()
			got <- tap.RefusedErr()
		}()
		if _, err := tap.Dialer()("tcp", "127.0.0.1:2281", time.Second); !refusal(err) {
			t.Fatalf("the handshake with a peer that does not speak TLS: %v, want a refusal", err)
		}
		if err := <-got; err == nil {
			t.Fatal("Refused closed with no error to tell")
		}
	}
}

// A refusal counts once per server, and a connection that reaches a
// session forgets the refusals: Refused closes only when every server
// refused since.
func TestRefusedNeedsEveryServer(t *testing.T) {
	tap := New(Config{TLS: &tls.Config{}})
	if err := tap.HostProvider().Init([]string{"a:1", "b:1"}); err != nil {
		t.Fatal(err)
	}
	refused := tls.RecordHeaderError{Msg: "tls: first record does not look like a TLS handshake"}
	closed := func() bool {
		select {
		case <-tap.Refused():
			return true
		default:
			return false
		}
	}
	tap.noteRefusal("a:1", refused)
	tap.noteRefusal("a:1", refused)
	tap.noteRefusal("b:1", net.ErrClosed) // not a refusal: trying again may work
	tap.sessionReached()
	tap.noteRefusal("b:1", refused)
	if closed() {
		t.Fatal("Refused closed before every server refused since the last session")
	}
	tap.noteRefusal("a:1", refused)
	if !closed() || tap.RefusedErr() == nil {
		t.Fatalf("Refused not closed (%v) or no error (%v) after both servers refused", closed(), tap.RefusedErr())
	}
}

// A server named twice in the list (as the caller wrote it, or "host" and
// "host:2181", which go-zookeeper formats alike) is one server: its
// refusal is every refusal there is to wait for. (It was counted twice,
// and Refused never closed: Connect waited out its deadline.)
func TestRefusedCountsAServerOnce(t *testing.T) {
	tap := New(Config{TLS: &tls.Config{}})
	if err := tap.HostProvider().Init([]string{"a:1", "b:1", "a:1"}); err != nil {
		t.Fatal(err)
	}
	refused := tls.RecordHeaderError{Msg: "tls: first record does not look like a TLS handshake"}
	tap.noteRefusal("a:1", refused)
	select {
	case <-tap.Refused():
		t.Fatal("Refused closed before b:1 refused")
	default:
	}
	tap.noteRefusal("b:1", refused)
	select {
	case <-tap.Refused():
	default:
		t.Fatal("Refused not closed once both servers refused")
	}
}

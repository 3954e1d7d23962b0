package zklock_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// A Connect to a port where no server listens, with a context that has no
// deadline, fails within ConnectTimeout and says why: the dial error.
func TestConnectNoServerFailsFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	start := time.Now()
	s, err := zklock.Connect(context.Background(), []string{" " + addr + " "}, zklock.WithLogger(quietLog))
	took := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatal("Connect to a port with no server succeeded")
	}
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	if took > zklock.ConnectTimeout+2*time.Second {
		t.Errorf("Connect took %v; the bound is %v", took, zklock.ConnectTimeout)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %q: want the deadline and the dial error (connection refused)", err)
	}
}

// Server addresses are trimmed; an empty one is refused.
func TestConnectServerList(t *testing.T) {
	if _, err := zklock.Connect(context.Background(), []string{"127.0.0.1:1", " "}); !errors.Is(err, zklock.ErrInvalidOption) {
		t.Errorf("an empty address: %v; want ErrInvalidOption", err)
	}
}

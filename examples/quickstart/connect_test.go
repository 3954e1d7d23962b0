package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Pointed at a port where no server listens, the program's error says how
// to start one, and still wraps the cause for errors.Is.
func TestConnectErrorSaysHowToStartZooKeeper(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = run(ctx, []string{addr})
	if err == nil {
		t.Fatal("run against a port with no server: no error")
	}
	if !strings.Contains(err.Error(), "scripts/zk.sh start") {
		t.Errorf("the connect error does not say to run scripts/zk.sh start: %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("the connect error does not wrap its causes (the deadline, connection refused): %v", err)
	}
}

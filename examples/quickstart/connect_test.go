package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
)

// Pointed at a port where no server listens, the program's error asks
// whether ZooKeeper runs there, and still wraps the cause for errors.Is.
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
	if !strings.Contains(err.Error(), "is ZooKeeper running there?") {
		t.Errorf("the connect error does not ask whether ZooKeeper runs: %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("the connect error does not wrap its causes (the deadline, connection refused): %v", err)
	}
}

// A server that answers says what is wrong, and nothing asks whether
// ZooKeeper runs: a chroot that does not exist says how to create it, and
// a secure client port (this program speaks no TLS) says that it is one,
// at once. On e876833 the program added "(is ZooKeeper running?
// scripts/zk.sh start starts one)" to both, and the secure port waited
// out the 5-s connect deadline: "no session: context deadline exceeded".
func TestConnectErrorOfAServerThatAnswers(t *testing.T) {
	ca, err := zkserver.NewCA("quickstart test CA")
	if err != nil {
		t.Fatal(err)
	}
	secure := zktest.Ensemble(t, 1, zkserver.WithTLS(zkserver.TLS{CA: ca}))
	for _, c := range []struct {
		name, server, says string
	}{
		{"missing chroot", zktest.Servers(t)[0] + "/no/such/chroot", "tierlock create"},
		{"secure client port", secure.SecureAddr(0), "is this its secure client port?"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		err := run(ctx, []string{c.server})
		cancel()
		took := time.Since(start)
		t.Logf("%s: after %v: %v", c.name, took.Round(time.Millisecond), err)
		if err == nil || strings.Contains(err.Error(), "is ZooKeeper running") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want %q, without the hint to start ZooKeeper", c.name, err, c.says)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: waited out the connect deadline (%v)", c.name, took)
		}
	}
}

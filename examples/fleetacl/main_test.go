package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
)

// The program runs against one real ZooKeeper shared by the package's
// tests; goleak checks that it leaves no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

// While the program holds, a client without the credentials reads the
// queue but cannot delete the holder's node nor queue one of its own.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := zktest.Path(t) + "/jobs/report"
	var out zktest.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-zk", strings.Join(zktest.Servers(t), ","), "-path", path,
			"-password", zktest.FleetPassword, "-for", "20s"}, &out)
	}()
	zktest.Eventually(t, 20*time.Second, "the hold", func() bool { return strings.Contains(out.String(), "holding") })

	stranger, _, err := zk.Connect(zktest.Servers(t), 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	kids, _, err := stranger.Children(path)
	if err != nil || len(kids) != 1 {
		t.Fatalf("stranger's listing: %v %v", kids, err)
	}
	if err := stranger.Delete(path+"/"+kids[0], -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("stranger's delete: %v, want ErrNoAuth", err)
	}
	if _, err := stranger.Create(path+"/_c_x-lock-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("stranger's create: %v, want ErrNoAuth", err)
	}
	cancel() // as Ctrl-C does
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "released") {
		t.Errorf("output:\n%s", out.String())
	}
}

// -zk defaults to 127.0.0.1:2181 without $TIERLOCK_ZK_SERVERS; with no
// server at the address, run fails within its bound (here the caller's
// deadline, shorter than zklock.ConnectTimeout), saying where it looked,
// how long, the dial error, and how to start a server.
func TestRunNoServer(t *testing.T) {
	t.Setenv("TIERLOCK_ZK_SERVERS", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	err := run(ctx, []string{"-password", "x"}, &zktest.SyncBuffer{})
	cancel()
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:2181") {
		t.Errorf("without -zk: %v; want the default 127.0.0.1:2181 named", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel = context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = run(ctx, []string{"-zk", addr, "-password", "x"}, &zktest.SyncBuffer{})
	took := time.Since(start)
	if err == nil {
		t.Fatal("run succeeded with no server")
	}
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	if took > 1500*time.Millisecond+2*time.Second {
		t.Errorf("took %v, the bound was 1.5s", took)
	}
	for _, want := range []string{"no ZooKeeper reachable at " + addr + " within 1.5s", "connection refused", "scripts/zk.sh start"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q", want)
		}
	}
}

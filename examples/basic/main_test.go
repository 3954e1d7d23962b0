package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
)

// The program runs against one real ZooKeeper shared by the package's
// tests; goleak checks that it leaves no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	args := []string{
		"-zk", strings.Join(zktest.Servers(t), ","),
		"-path", fmt.Sprintf("/tierlock-examples-test/basic-%d", os.Getpid()),
	}
	if err := run(ctx, args, &out); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	t.Logf("output:\n%s", out.String())
	for _, want := range []string{
		"hold count 1,",
		"re-entered, hold count 2",
		"Release of the inner hold: hold count 1, still held",
		"TryAcquire from another goroutine: false",
		"TryAcquire from another session (another process): false",
		"3 steps done, held.Done() never fired",
		"the held context is done: tier: lock released",
		"held.Done() fired: tier: lock lost: lock node deleted",
		"errors.Is(err, tier.ErrLockLost) = true",
		"done",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestRunBadFlag(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-no-such-flag"}, &out); err == nil {
		t.Fatal("run accepted an unknown flag")
	}
}

// -zk defaults to $TIERLOCK_ZK_SERVERS, else 127.0.0.1:2181; an empty
// list is refused, naming the flag and the variable.
func TestServersDefault(t *testing.T) {
	t.Setenv("TIERLOCK_ZK_SERVERS", "")
	if got := defaultServers(); got != "127.0.0.1:2181" {
		t.Errorf("default %q, want 127.0.0.1:2181", got)
	}
	t.Setenv("TIERLOCK_ZK_SERVERS", "zk1:2181,zk2:2181")
	if got := defaultServers(); got != "zk1:2181,zk2:2181" {
		t.Errorf("default %q, want $TIERLOCK_ZK_SERVERS", got)
	}
	err := run(context.Background(), []string{"-zk", " , "}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-zk") || !strings.Contains(err.Error(), "TIERLOCK_ZK_SERVERS") {
		t.Errorf("run with an empty -zk: %v; want an error naming -zk and TIERLOCK_ZK_SERVERS", err)
	}
}

// With no server at the address, run fails within its bound (here the
// caller's deadline, shorter than zklock.ConnectTimeout), saying where it
// looked, how long, the dial error, and how to start a server.
func TestRunNoServer(t *testing.T) {
	addr := deadAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := run(ctx, []string{"-zk", addr}, &bytes.Buffer{})
	took := time.Since(start)
	if err == nil {
		t.Fatal("run succeeded with no server")
	}
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	if took > 1500*time.Millisecond+2*time.Second {
		t.Errorf("took %v, the bound was 1.5s", took)
	}
	for _, want := range []string{"no ZooKeeper reachable at " + addr, "within 1.5s", "connection refused", "scripts/zk.sh start"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q", want)
		}
	}
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

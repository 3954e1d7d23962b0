package zkserver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zkserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func dial(t *testing.T, addrs []string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(addrs, 4*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// retry runs op until it succeeds or 30s pass: after a restart the client
// needs a moment to reconnect.
func retry(t *testing.T, what string, op func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := op()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func start(t *testing.T, n int) *zkserver.Cluster {
	t.Helper()
	if _, ok := zkserver.FromEnv(); ok {
		t.Skip("TIERLOCK_ZK_SERVERS is set: not starting servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := zkserver.StartEnsemble(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestStandaloneRestartKeepsData(t *testing.T) {
	c := start(t, 1)
	ctx := context.Background()
	if mode, err := c.Mode(ctx, 0); err != nil || mode != "standalone" {
		t.Fatalf("mode = %q, %v; want standalone", mode, err)
	}
	conn := dial(t, c.Addrs())
	retry(t, "create", func() error {
		_, err := conn.Create("/kept", []byte("v1"), 0, zk.WorldACL(zk.PermAll))
		return err
	})
	before, err := c.Counters(ctx)
	if err != nil || before.PacketsReceived == 0 || before.ZnodeCount < 2 {
		t.Fatalf("counters = %+v, %v", before, err)
	}
	pid := c.Pid(0)
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if c.Running(0) {
		t.Fatal("member still running after Kill")
	}
	if _, err := c.Mode(ctx, 0); err == nil {
		t.Fatal("killed member still answers srvr")
	}
	if err := c.Kill(0); !errors.Is(err, zkserver.ErrNotRunning) {
		t.Fatalf("second Kill: %v, want ErrNotRunning", err)
	}
	if err := c.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if c.Pid(0) == pid || c.Pid(0) == 0 {
		t.Fatalf("pid after restart = %d (before %d)", c.Pid(0), pid)
	}
	retry(t, "get after restart", func() error {
		data, _, err := conn.Get("/kept")
		if err == nil && string(data) != "v1" {
			t.Fatalf("data after restart = %q", data)
		}
		return err
	})
}

func TestEnsembleLeaderFailover(t *testing.T) {
	c := start(t, 3)
	ctx := context.Background()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn := dial(t, c.Addrs())
	retry(t, "create", func() error {
		_, err := conn.Create("/ens", []byte("x"), 0, zk.WorldACL(zk.PermAll))
		return err
	})
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	var next int
	retry(t, "new leader", func() error {
		next, err = c.Leader(ctx)
		return err
	})
	if next == leader {
		t.Fatalf("leader %d still leads after being killed", leader)
	}
	retry(t, "write after failover", func() error {
		_, err := conn.Set("/ens", []byte("y"), -1)
		return err
	})
	if err := c.Restart(ctx, leader); err != nil {
		t.Fatal(err)
	}
	mode, err := c.Mode(ctx, leader)
	if err != nil || (mode != "follower" && mode != "leader") {
		t.Fatalf("restarted member mode = %q, %v", mode, err)
	}
	// The restarted member catches up with the write it missed.
	one := dial(t, []string{c.Addr(leader)})
	retry(t, "read from restarted member", func() error {
		if _, err := one.Sync("/ens"); err != nil {
			return err
		}
		data, _, err := one.Get("/ens")
		if err == nil && string(data) != "y" {
			return errors.New("stale data " + string(data))
		}
		return err
	})
}

func TestBadInput(t *testing.T) {
	if _, err := zkserver.StartEnsemble(context.Background(), 2); err == nil {
		t.Fatal("ensemble of 2 accepted")
	}
	t.Setenv(zkserver.EnvServers, "127.0.0.1:1, 127.0.0.1:2")
	c, ok := zkserver.FromEnv()
	if !ok || c.Size() != 2 || c.Addr(1) != "127.0.0.1:2" || !c.External() {
		t.Fatalf("FromEnv = %v %v", c, ok)
	}
	if err := c.Kill(0); !errors.Is(err, zkserver.ErrExternal) {
		t.Fatalf("Kill external: %v", err)
	}
	if _, err := c.Mode(context.Background(), 5); !errors.Is(err, zkserver.ErrBadMember) {
		t.Fatalf("Mode(5): %v", err)
	}
}

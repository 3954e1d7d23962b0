package zkserver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"strings"
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
	if testing.Short() {
		t.Skip("-short: restarts a server, about 2 s")
	}
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

// The servers grant the session timeout asked for, from 2 ticks (0.4s) up
// to a minute, not ZooKeeper's default 20 ticks (4s at 200ms): cons shows
// each session's negotiated timeout ("to=" in ms). CPU reads the server's
// processor time, which grows with work.
func TestSessionTimeoutGrantedAndCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a server to read its timeouts, about 2 s")
	}
	c := start(t, 1)
	ctx := context.Background()
	if lo, hi := c.SessionTimeouts(); lo != 400*time.Millisecond || hi != zkserver.DefaultMaxSessionTimeout {
		t.Errorf("SessionTimeouts = %v, %v; want 400ms, %v", lo, hi, zkserver.DefaultMaxSessionTimeout)
	}
	cpu0, err := c.CPU(0)
	if err != nil || cpu0 <= 0 {
		t.Fatalf("CPU = %v, %v; want > 0 after a JVM start", cpu0, err)
	}
	for _, tc := range []struct{ ask, want time.Duration }{
		{10 * time.Second, 10 * time.Second}, {60 * time.Second, 60 * time.Second},
		{400 * time.Millisecond, 400 * time.Millisecond}, {100 * time.Millisecond, 400 * time.Millisecond},
		{90 * time.Second, 60 * time.Second},
	} {
		conn, _, err := zk.Connect(c.Addrs(), tc.ask, zk.WithLogger(quiet{}))
		if err != nil {
			t.Fatal(err)
		}
		retry(t, "session", func() error {
			if _, err := conn.Sync("/"); err != nil {
				return err
			}
			cons, err := c.FourLetter(ctx, 0, "cons")
			if err != nil {
				return err
			}
			sid := fmt.Sprintf("sid=0x%x", conn.SessionID())
			for _, line := range strings.Split(cons, "\n") {
				if strings.Contains(line, sid+",") {
					if want := fmt.Sprintf(",to=%d,", tc.want.Milliseconds()); !strings.Contains(line, want) {
						t.Errorf("asked for %v: %s, want %s", tc.ask, line, want)
					}
					return nil
				}
			}
			return fmt.Errorf("session %s not in cons: %s", sid, cons)
		})
		conn.Close()
	}
	for i := 0; i < 200; i++ {
		if _, err := c.Mntr(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	if cpu1, err := c.CPU(0); err != nil || cpu1 <= cpu0 {
		t.Errorf("CPU after 200 mntr = %v, %v; before %v", cpu1, err, cpu0)
	}
	if total, err := c.TotalCPU(); err != nil || total < cpu0 {
		t.Errorf("TotalCPU = %v, %v", total, err)
	}
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CPU(0); !errors.Is(err, zkserver.ErrNotRunning) {
		t.Errorf("CPU of a stopped member: %v, want ErrNotRunning", err)
	}
}

func TestEnsembleLeaderFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts an ensemble and kills its leader, about 4 s")
	}
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
	if _, err := c.CPU(0); !errors.Is(err, zkserver.ErrExternal) {
		t.Fatalf("CPU of an external server: %v", err)
	}
	if lo, hi := c.SessionTimeouts(); lo != 0 || hi != 0 {
		t.Fatalf("SessionTimeouts of external servers = %v, %v; want unknown", lo, hi)
	}
}

// A member started WithTLS serves a secure client port with a
// certificate for 127.0.0.1 from the test's CA, and takes a client
// certificate the CA issued as the connection's x509 identity: a node
// whose ACL names that identity is readable on the TLS connection only.
// The plain port still serves.
func TestSecureClientPort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a TLS server, about 2 s")
	}
	if _, ok := zkserver.FromEnv(); ok {
		t.Skip("TIERLOCK_ZK_SERVERS is set: not starting servers")
	}
	ca, err := zkserver.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := zkserver.Start(ctx, zkserver.WithTLS(zkserver.TLS{CA: ca}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	client, err := ca.Issue(pkix.Name{CommonName: "client", Organization: []string{"tierlock"}})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := client.TLS()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1"}
	secure, _, err := zk.Connect([]string{c.SecureAddr(0)}, 4*time.Second, zk.WithLogger(quiet{}),
		zk.WithDialer(func(network, addr string, timeout time.Duration) (net.Conn, error) {
			return tls.DialWithDialer(&net.Dialer{Timeout: 5 * timeout}, network, addr, cfg)
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer secure.Close()
	acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: "CN=client,O=tierlock"}}
	retry(t, "create over TLS", func() error {
		_, err := secure.Create("/x509-only", []byte("v"), 0, acl)
		return err
	})
	if _, _, err := secure.Get("/x509-only"); err != nil {
		t.Fatalf("get over TLS as the node's x509 identity: %v", err)
	}
	plain := dial(t, c.Addrs())
	retry(t, "get on the plain port", func() error {
		_, _, err := plain.Get("/x509-only")
		if errors.Is(err, zk.ErrNoAuth) {
			return nil
		}
		return fmt.Errorf("get without the identity = %v, want zk.ErrNoAuth", err)
	})
}

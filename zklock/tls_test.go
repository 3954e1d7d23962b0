package zklock_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// tlsServer starts a server with a secure client port whose certificate
// (for 127.0.0.1 and localhost) a throwaway CA issued; the server wants a
// client certificate from that CA (ssl.clientAuth=need).
func tlsServer(t *testing.T) (*zkserver.Cluster, *zkserver.CA) {
	t.Helper()
	ca, err := zkserver.NewCA("tierlock test CA")
	if err != nil {
		t.Fatal(err)
	}
	return zktest.Ensemble(t, 1, zkserver.WithTLS(zkserver.TLS{CA: ca})), ca
}

// clientTLS returns a configuration that trusts trusted and presents a
// certificate ca issued for cn (none when cn is "").
func clientTLS(t *testing.T, trusted, ca *zkserver.CA, cn string) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: trusted.Pool()}
	if cn != "" {
		c, err := ca.Issue(pkix.Name{CommonName: cn, Organization: []string{"tierlock"}})
		if err != nil {
			t.Fatal(err)
		}
		cert, err := c.TLS()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// tlsEnv is a server with a secure client port and the CA of its
// certificates, shared by TestTLS's parts.
type tlsEnv struct {
	c    *zkserver.Cluster
	ca   *zkserver.CA
	addr string // the secure port's, 127.0.0.1
	port string
}

// connect connects to servers over TLS with cfg, within 30 s, and says
// how long that took; the session closes when the test ends.
func (e *tlsEnv) connect(t *testing.T, servers []string, cfg *tls.Config, opts ...zklock.SessionOption) (*zklock.Session, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	s, err := zklock.Connect(ctx, servers, append(opts, zklock.WithTestHooks(), zklock.WithTLS(cfg), zklock.WithLogger(zktest.QuietLog))...)
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, time.Since(start), err
}

// acquireRelease takes and gives back a lock on path.
func acquireRelease(t *testing.T, s *zklock.Session, path string, opts ...zklock.Option) error {
	h, err := newLock(t, s, path, opts...).Acquire(zktest.Context(t, 30*time.Second))
	if err == nil {
		err = h.Release()
	}
	return err
}

// Over the secure client port: a session acquires and releases, with the
// server's certificate checked against the IP address or the name it was
// given (go-zookeeper alone would dial the resolved address), inside a
// chroot too; WithDialer opens the connection TLS runs on, and the tap
// still reads the plaintext requests (it counts the session's creates).
// The client certificate is the session's x509 identity: a lock path
// whose ACL names one client refuses another. A client that does not
// trust the server's CA, and one the server refuses, fail at once with
// the TLS error, not at Connect's deadline, also when the server list
// names the server twice.
func TestTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a private TLS server, about 5 s")
	}
	c, ca := tlsServer(t)
	e := &tlsEnv{c: c, ca: ca, addr: c.SecureAddr(0)}
	_, e.port, _ = net.SplitHostPort(e.addr)
	t.Run("acquire and release", e.acquireAndRelease)
	t.Run("chroot", e.chroot)
	t.Run("x509 identity in ACLs", e.x509Identity)
	t.Run("refused at once", e.refusedAtOnce)
	t.Run("plain port", e.plainPort)
	t.Run("plain client on the secure port", e.plainClient)
}

func (e *tlsEnv) acquireAndRelease(t *testing.T) {
	var dials atomic.Int32
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		dials.Add(1)
		return net.DialTimeout(network, address, timeout)
	}
	for _, server := range []string{e.addr, "localhost:" + e.port} {
		s, took, err := e.connect(t, []string{server}, clientTLS(t, e.ca, e.ca, "worker"), zklock.WithDialer(dialer))
		if err != nil {
			t.Fatalf("%s: %v", server, err)
		}
		t.Logf("%s: connected over TLS in %v", server, took.Round(time.Millisecond))
		if err := acquireRelease(t, s, "/tls/lock"); err != nil {
			t.Fatal(err)
		}
		if n := zklock.Written(s, zklock.OpCreate) + zklock.Written(s, zklock.OpMulti); n == 0 {
			t.Error("the tap read no create: it does not see the plaintext")
		}
	}
	if dials.Load() < 2 {
		t.Errorf("WithDialer's dialer opened %d connections, want one per session", dials.Load())
	}
}

func (e *tlsEnv) chroot(t *testing.T) {
	s, _, err := e.connect(t, []string{e.addr}, clientTLS(t, e.ca, e.ca, "worker"))
	if err != nil {
		t.Fatal(err)
	}
	if err := zkCreateAll(s.Conn(), "/tls/chroot"); err != nil {
		t.Fatal(err)
	}
	chrooted, _, err := e.connect(t, []string{e.addr + "/tls/chroot"}, clientTLS(t, e.ca, e.ca, "worker"))
	if err != nil {
		t.Fatal(err)
	}
	if err := acquireRelease(t, chrooted, "/lock"); err != nil {
		t.Fatal(err)
	}
	if !exists(t, s.Conn(), "/tls/chroot/lock") {
		t.Error("the chrooted lock path is not under the chroot")
	}
}

func (e *tlsEnv) x509Identity(t *testing.T) {
	a, _, err := e.connect(t, []string{e.addr}, clientTLS(t, e.ca, e.ca, "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := e.connect(t, []string{e.addr}, clientTLS(t, e.ca, e.ca, "b"))
	if err != nil {
		t.Fatal(err)
	}
	onlyA := zklock.WithACL([]zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: "CN=a,O=tierlock"}})
	if err := acquireRelease(t, a, "/tls/only-a", onlyA); err != nil {
		t.Fatalf("a on its own path: %v", err)
	}
	if err := acquireRelease(t, b, "/tls/only-a"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("b on a's path: %v, want zk.ErrNoAuth", err)
	}
}

func (e *tlsEnv) refusedAtOnce(t *testing.T) {
	other, err := zkserver.NewCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		servers []string
		cfg     *tls.Config
		says    string
	}{
		{"server's CA not trusted", []string{e.addr}, clientTLS(t, other, e.ca, "worker"), "certificate signed by unknown authority"},
		{"no client certificate", []string{e.addr}, clientTLS(t, e.ca, e.ca, ""), "remote error: tls:"},
		{"client certificate from another CA", []string{e.addr}, clientTLS(t, e.ca, other, "worker"), "remote error: tls:"},
		// Issue 55, item 7: a server named twice was counted twice, and
		// never refused: Connect waited out its deadline.
		{"server named twice", []string{e.addr, e.addr}, clientTLS(t, other, e.ca, "worker"), "certificate signed by unknown authority"},
	} {
		_, took, err := e.connect(t, c.servers, c.cfg)
		if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v after %v; want the TLS error (%s) before the deadline", c.name, err, took, c.says)
		}
		t.Logf("%s: after %v: %v", c.name, took.Round(time.Millisecond), err)
	}
}

func (e *tlsEnv) plainPort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := zklock.Connect(ctx, e.c.Addrs(), zklock.WithTLS(clientTLS(t, e.ca, e.ca, "worker")), zklock.WithLogger(zktest.QuietLog))
	if err == nil || !strings.Contains(err.Error(), "is this its secure client port?") {
		t.Errorf("TLS to the plain port: %v; want a hint at the secure port", err)
	}
	t.Log(err)
}

// A client without TLS pointed at the secure client port fails at once,
// saying so, as TLS to the plain port does: the server closes the plain
// connection before answering, and a second connection finds that the
// port speaks TLS. On e876833 it waited out its deadline: "no session:
// context deadline exceeded".
func (e *tlsEnv) plainClient(t *testing.T) {
	const deadline = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	_, err := zklock.Connect(ctx, []string{e.addr}, zklock.WithLogger(zktest.QuietLog))
	took := time.Since(start)
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	if err == nil || !strings.Contains(err.Error(), "is this its secure client port?") || !errors.Is(err, zk.ErrNoServer) {
		t.Fatalf("a plain client on the secure port: %v; want the hint, and zk.ErrNoServer", err)
	}
	if took > deadline/2 {
		t.Errorf("it took %v of the %v deadline", took, deadline)
	}
}

// WithTLS(nil) is refused, and so is WithTLS under NewSession, whose
// connection exists: ignoring it would leave the caller believing the
// connection encrypted.
func TestWithTLSRefused(t *testing.T) {
	if _, err := zklock.Connect(context.Background(), zktest.Servers(t), zklock.WithTLS(nil)); !errors.Is(err, zklock.ErrInvalidOption) {
		t.Errorf("WithTLS(nil): %v, want ErrInvalidOption", err)
	}
	s := connect(t, zktest.Servers(t))
	if _, err := zklock.NewSession(s.Conn(), nil, zklock.WithTLS(&tls.Config{})); !errors.Is(err, zklock.ErrInvalidOption) {
		t.Errorf("WithTLS under NewSession: %v, want ErrInvalidOption", err)
	}
}

// With TLS 1.3 (ZooKeeper 3.9's default) the client's handshake ends
// before the server has checked the client's certificate: the server's
// refusal comes on the first read of the connect response, and Connect
// still fails with it at once.
func TestTLS13RefusalAfterTheHandshake(t *testing.T) {
	ca, err := zkserver.NewCA("tierlock test CA")
	if err != nil {
		t.Fatal(err)
	}
	c := zktest.Ensemble(t, 1, zkserver.WithTLS(zkserver.TLS{CA: ca, Protocol: "TLSv1.3"}))
	for _, cn := range []string{"worker", ""} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		s, err := zklock.Connect(ctx, c.SecureAddrs(), zklock.WithTestHooks(), zklock.WithTLS(clientTLS(t, ca, ca, cn)), zklock.WithLogger(zktest.QuietLog))
		cancel()
		took := time.Since(start).Round(time.Millisecond)
		if cn != "" {
			if err != nil {
				t.Fatalf("with a certificate: %v", err)
			}
			s.Close()
			continue
		}
		if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "remote error: tls:") {
			t.Fatalf("without a certificate: %v after %v; want the server's refusal before the deadline", err, took)
		}
		t.Logf("without a certificate: after %v: %v", took, err)
	}
}

// Package zktest shares one real ZooKeeper server among the tests of a
// package: TestMain wraps testing.M so that the server starts before the
// tests and stops after them, whatever their outcome, and goleak then checks
// that nothing leaked:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }
//
// Tests isolate themselves by lock path (see [Path]). When
// TIERLOCK_ZK_SERVERS is set, that server or ensemble is used instead.
package zktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/zklock"
)

var shared *zkserver.Cluster

type wrapped struct {
	m    *testing.M
	opts []zkserver.Option
}

// Wrap returns a goleak.TestingM whose Run starts the shared server, runs
// the tests and stops the server.
func Wrap(m *testing.M, opts ...zkserver.Option) interface{ Run() int } {
	return wrapped{m: m, opts: opts}
}

func (w wrapped) Run() int {
	c, ok := zkserver.FromEnv()
	if !ok {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		var err error
		c, err = zkserver.Start(ctx, w.opts...)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "zktest: cannot start ZooKeeper:", err)
			return 1
		}
	}
	shared = c
	defer c.Close()
	return w.m.Run()
}

// Cluster returns the shared server started by Wrap.
func Cluster(t testing.TB) *zkserver.Cluster {
	t.Helper()
	if shared == nil {
		t.Fatal("zktest: no shared server: TestMain must use zktest.Wrap")
	}
	return shared
}

// Servers returns the shared server's client addresses.
func Servers(t testing.TB) []string { return Cluster(t).Addrs() }

// Addrs returns the shared server's client addresses, or nil when no
// TestMain started one with Wrap. It is for Example functions, which have
// no testing.TB to pass to Servers.
func Addrs() []string {
	if shared == nil {
		return nil
	}
	return shared.Addrs()
}

var seq atomic.Int64

// Path returns a lock path unique to this test run and test, such as
// /tierlock-test/1732234567-3/TestFoo.
func Path(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/tierlock-test/%d-%d/%s", os.Getpid(), seq.Add(1), name)
}

// Ensemble starts a private ensemble of n members for one test and stops
// it when the test ends. It skips the test when TIERLOCK_ZK_SERVERS points
// at external servers, which cannot be killed and restarted.
func Ensemble(t testing.TB, n int, opts ...zkserver.Option) *zkserver.Cluster {
	t.Helper()
	if _, ok := zkserver.FromEnv(); ok {
		t.Skip("external ZooKeeper: cannot start a private ensemble")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c, err := zkserver.StartEnsemble(ctx, n, opts...)
	if err != nil {
		t.Fatalf("start ensemble of %d: %v", n, err)
	}
	t.Cleanup(func() {
		// A scene that failed says what its servers saw last.
		if t.Failed() {
			for i := range n {
				t.Logf("member %d's server log (its last 40 lines):\n%s", i, c.LogTail(i, 40))
			}
		}
		c.Close()
	})
	return c
}

// QuietLog discards what it is given: tests pass it to sessions and locks.
var QuietLog = slog.New(slog.DiscardHandler)

// Connect opens a session on servers (quiet logs, 4 s session timeout unless
// opts say otherwise) and closes it when the test ends.
func Connect(t testing.TB, servers []string, opts ...zklock.SessionOption) *zklock.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts = append([]zklock.SessionOption{zklock.WithLogger(QuietLog), zklock.WithSessionTimeout(4 * time.Second)}, opts...)
	s, err := zklock.Connect(ctx, servers, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Context returns a context that ends after d or with the test.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Children lists path on conn; a missing path has no children.
func Children(t testing.TB, conn *zk.Conn, path string) []string {
	t.Helper()
	c, _, err := conn.Children(path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	return c
}

// Eventually polls cond every 10 ms until it holds, failing the test after d.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WatchesBySession returns how many watches each session holds on paths
// under prefix, from the shared server's wchc four-letter word.
func WatchesBySession(t testing.TB, prefix string) map[int64]int {
	t.Helper()
	out, err := Cluster(t).FourLetter(context.Background(), 0, "wchc")
	if err != nil {
		t.Fatal(err)
	}
	m := map[int64]int{}
	var cur int64
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "0x"):
			cur, _ = strconv.ParseInt(strings.TrimPrefix(line, "0x"), 16, 64)
		case strings.HasPrefix(line, prefix):
			m[cur]++
		}
	}
	return m
}

// ReportRequests runs fn as the timed part of a benchmark and reports the
// requests the shared server received per iteration (reqs/op).
func ReportRequests(b *testing.B, fn func()) {
	b.Helper()
	c := Cluster(b)
	before, err := c.Counters(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	cpu := processCPU()
	b.ResetTimer()
	fn()
	b.StopTimer()
	cpu = processCPU() - cpu
	after, err := c.Counters(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	// mntr itself counts as one packet per member.
	reqs := after.PacketsReceived - before.PacketsReceived - int64(c.Size())
	b.ReportMetric(float64(reqs)/float64(b.N), "reqs/op")
	// The client's CPU: the server is another process.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "client-µs/op")
}

// processCPU is the CPU time (user + system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Cancelled returns a context that is already cancelled.
func Cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// NoPanic runs call and returns its error, failing the test if it panics:
// bad input must get an error value, never a panic.
func NoPanic(t testing.TB, call func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panicked: %v", r)
		}
	}()
	return call()
}

// IsClosed reports whether ch is closed (or has a value ready), without
// waiting.
func IsClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// NewLock returns a lock on path and closes it when the test ends.
func NewLock(t testing.TB, s *zklock.Session, path string, opts ...zklock.Option) *zklock.Lock {
	t.Helper()
	l, err := zklock.New(s, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// The identity of the ACL tests' fleet (see FleetACL).
const (
	FleetUser     = "fleet"
	FleetPassword = "s3cret"
)

// FleetACL lets the fleet (digest FleetUser:FleetPassword) do everything
// and the world only read: on a lock path it denies strangers CREATE and
// DELETE of lock nodes, which ZooKeeper checks against the parent's ACL.
func FleetACL() []zk.ACL {
	return append(zk.DigestACL(zk.PermAll, FleetUser, FleetPassword), zk.WorldACL(zk.PermRead)...)
}

// ACLRoot creates a persistent node at Path(t) with ACL acl, as an
// operator would once for a fleet (its ancestors are world-writable), and
// returns it. conn must hold credentials that acl lets create and delete
// below it, or the test cannot clean up (the server is the test's own).
func ACLRoot(t testing.TB, conn *zk.Conn, acl []zk.ACL) string {
	t.Helper()
	root := Path(t)
	for _, p := range []string{path.Dir(path.Dir(root)), path.Dir(root)} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if _, err := conn.Create(root, nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	return root
}

// SyncBuffer is a bytes.Buffer that goroutines under test write (a
// session's logger, a running command) while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TracedStepEnv names the environment variable that make test sets in its
// race run: the tests that call TracedStep then skip there, because make
// test runs them again in its traced step (with the tierlocktrace tag and
// -race), where their history is replayed through the model. Each runs
// once, under both.
const TracedStepEnv = "TIERLOCK_TRACED_STEP"

// TracedStep skips t in a build without the tierlocktrace tag when
// TracedStepEnv is "skip": see TracedStepEnv.
func TracedStep(t *testing.T) {
	t.Helper()
	if !trace.Enabled && os.Getenv(TracedStepEnv) == "skip" {
		t.Skip("runs in make test's traced step (-tags tierlocktrace, -race), replayed through the model")
	}
}

package zklock_test

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// One real ZooKeeper for the package; goleak checks nothing is left running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

// Shared helpers: see internal/zktest.
var (
	quietLog         = zktest.QuietLog
	ctxT             = zktest.Context
	children         = zktest.Children
	eventually       = zktest.Eventually
	watchesBySession = zktest.WatchesBySession
	reportRequests   = zktest.ReportRequests
)

var newLock = zktest.NewLock

var nodeName = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-\d{10}$`)

// watchersOf returns how many sessions watch path, from the server's wchp
// four-letter word.
func watchersOf(t testing.TB, path string) int {
	t.Helper()
	out, err := zktest.Cluster(t).FourLetter(context.Background(), 0, "wchp")
	if err != nil {
		t.Fatal(err)
	}
	n, in := 0, false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "/"):
			in = line == path
		case in && strings.HasPrefix(strings.TrimSpace(line), "0x"):
			n++
		}
	}
	return n
}

// acquired is what an Acquire run on another goroutine returned.
type acquired struct {
	h   *zklock.Hold
	err error
}

// goAcquire runs l.Acquire(ctx) on a goroutine of its own and returns the
// channel its result arrives on (buffered: nobody need read it).
func goAcquire(ctx context.Context, l *zklock.Lock) <-chan acquired {
	c := make(chan acquired, 1)
	go func() {
		h, err := l.Acquire(ctx)
		c <- acquired{h, err}
	}()
	return c
}

// Regression tests for the defects of the hostile review (issue 9). Each
// failed on the code before the fix; the comment says how.

// epipe is what go-zookeeper hands a request whose socket write failed: the
// raw *net.OpError, not zk.ErrConnectionClosed.
var epipe = &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}

// failOnce fails the first write of a request with opcode op whose bytes
// contain key.
func failOnce(s *zklock.Session, op int32, key string) *atomic.Bool {
	var fired atomic.Bool
	zklock.SetWriteHook(s, func(o int32, b []byte) error {
		if o == op && bytes.Contains(b, []byte(key)) && fired.CompareAndSwap(false, true) {
			return epipe
		}
		return nil
	})
	return &fired
}

func exists(t *testing.T, conn *zk.Conn, node string) bool {
	t.Helper()
	ok, _, err := conn.Exists(node)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// zkQuiet silences go-zookeeper's own logger.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// connect connects a session as zktest.Connect does, with the floor's test
// seam (WithTestHooks): the hooks export_test.go sets run in it, and its
// seams (Written, SetWriteHook, ...) can be read.
func connect(t testing.TB, servers []string, opts ...zklock.SessionOption) *zklock.Session {
	return zktest.Connect(t, servers, append([]zklock.SessionOption{zklock.WithTestHooks()}, opts...)...)
}

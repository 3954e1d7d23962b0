package zklock_test

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// One real ZooKeeper for the package; goleak checks nothing is left running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func connect(t testing.TB, servers []string, opts ...zklock.SessionOption) *zklock.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts = append([]zklock.SessionOption{zklock.WithLogger(quietLog), zklock.WithSessionTimeout(4 * time.Second)}, opts...)
	s, err := zklock.Connect(ctx, servers, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newLock(t testing.TB, s *zklock.Session, path string, opts ...zklock.Option) *zklock.Lock {
	t.Helper()
	l, err := zklock.New(s, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// children lists the lock path with a separate plain connection.
func children(t testing.TB, conn *zk.Conn, path string) []string {
	t.Helper()
	c, _, err := conn.Children(path)
	if err != nil && err != zk.ErrNoNode {
		t.Fatal(err)
	}
	return c
}

var nodeName = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-\d{10}$`)

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

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

// watchesBySession returns the number of watches each session holds under
// prefix, from wchc.
func watchesBySession(t testing.TB, prefix string) map[int64]int {
	t.Helper()
	out, err := zktest.Cluster(t).FourLetter(context.Background(), 0, "wchc")
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

package tier_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// TestMain shares one real ZooKeeper among the tests and checks for leaked
// goroutines; run as a child process (see multiproc_test.go) it is a worker.
func TestMain(m *testing.M) {
	exitIfKillChild()
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	goleak.VerifyTestMain(zktest.Wrap(m))
}

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

func newLock(t testing.TB, s *zklock.Session, path string, opts ...tier.Option) *tier.Lock {
	t.Helper()
	opts = append([]tier.Option{tier.WithLogger(quietLog)}, opts...)
	l, err := tier.New(s, path, opts...)
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

func children(t testing.TB, conn *zk.Conn, path string) []string {
	t.Helper()
	c, _, err := conn.Children(path)
	if err != nil && err != zk.ErrNoNode {
		t.Fatal(err)
	}
	return c
}

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

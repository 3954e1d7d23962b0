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
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
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
	t.Cleanup(func() { c.Close() })
	return c
}

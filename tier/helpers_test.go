package tier_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// TestMain shares one real ZooKeeper among the tests and checks for leaked
// goroutines; run as a child process (see multiproc_scene_test.go) it is a worker.
func TestMain(m *testing.M) {
	exitIfKillChild()
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	goleak.VerifyTestMain(zktest.Wrap(m), zktest.PorcupineLeftovers)
}

// Shared helpers: see internal/zktest.
var (
	quietLog         = zktest.QuietLog
	connect          = zktest.Connect
	ctxT             = zktest.Context
	children         = zktest.Children
	eventually       = zktest.Eventually
	watchesBySession = zktest.WatchesBySession
	counted          = zktest.ReportRequests
)

func newLock(t testing.TB, s *zklock.Session, path string, opts ...tier.Option) *tier.Lock {
	t.Helper()
	l, err := tier.New(s, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

package runonce_test

import (
	"log/slog"
	"testing"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// TestMain runs the package's tests against one real ZooKeeper, and
// goleak checks that nothing is left running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(zktest.Wrap(m))
}

// newRunner returns a Runner on a new session of its own (an instance of
// the fleet), closed when the test ends.
func newRunner(t testing.TB, root string, opts ...runonce.Option) (*runonce.Runner, *zklock.Session) {
	t.Helper()
	s := zktest.Connect(t, zktest.Servers(t))
	r, err := runonce.New(s, root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, s
}

// logged is a session whose logs (Info and above) a test reads.
func logged(t *testing.T) (*zklock.Session, *zktest.SyncBuffer) {
	t.Helper()
	var buf zktest.SyncBuffer
	return zktest.Connect(t, zktest.Servers(t), zklock.WithLogger(slog.New(slog.NewTextHandler(&buf, nil)))), &buf
}

package gocronlock_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/gocronlock/internal/fleet"
	"github.com/tierlock/tierlock/internal/child"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// TestMain runs the package's tests against one real ZooKeeper, and
// goleak checks that nothing is left running. Started by the fleet tests
// as a child (internal/child), the binary is a fleet instance instead.
func TestMain(m *testing.M) {
	child.Dispatch(map[string]func() int{fleetRole: fleetMain})
	goleak.VerifyTestMain(zktest.Wrap(m))
}

// fleetRole is the fleet instances' role: their task is fleet.Main's
// arguments.
const fleetRole = "gocronlock-fleet"

func fleetMain() int {
	var args []string
	if err := child.Task(&args); err != nil {
		fmt.Fprintln(os.Stderr, "fleet instance:", err)
		return 2
	}
	return fleet.Main(args, os.Stdout, os.Stderr)
}

// newLocker returns a Locker on a new session of its own (an instance of
// the fleet), closed when the test ends.
func newLocker(t testing.TB, root string, opts ...runonce.Option) (*gocronlock.Locker, *zklock.Session) {
	t.Helper()
	s := zktest.Connect(t, zktest.Servers(t))
	l, err := gocronlock.NewLocker(s, root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, s
}

// runOnce plays one gocron run: Lock, work, Unlock. It reports whether it
// ran, and the Lock error when it did not.
func runOnce(ctx context.Context, l *gocronlock.Locker, job string, work func()) (bool, error) {
	lk, err := l.Lock(ctx, job)
	if err != nil {
		return false, err
	}
	if work != nil {
		work()
	}
	return true, lk.Unlock(ctx)
}

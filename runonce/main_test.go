package runonce_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/child"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// TestMain runs the package's tests against one real ZooKeeper, and
// goleak checks that nothing is left running; in a child of a test, the
// child's part (stall_scene_test.go).
func TestMain(m *testing.M) {
	child.Dispatch(map[string]func() int{stallRole: stallMain})
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

// logged is a session on servers whose logs (Info and above) a test
// reads.
func logged(t *testing.T, servers []string, opts ...zklock.SessionOption) (*zklock.Session, *zktest.SyncBuffer) {
	t.Helper()
	var buf zktest.SyncBuffer
	opts = append([]zklock.SessionOption{zklock.WithLogger(slog.New(slog.NewTextHandler(&buf, nil)))}, opts...)
	return zktest.Connect(t, servers, opts...), &buf
}

// runonceLines returns the Runner's warnings and errors in logs.
func runonceLines(logs string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "component=runonce") && (strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR")) {
			out = append(out, line)
		}
	}
	return out
}

// runOnce plays one scheduler run: Claim, work, Release. It reports
// whether it ran, and Claim's error when it did not.
func runOnce(ctx context.Context, r *runonce.Runner, job string, work func()) (bool, error) {
	c, err := r.Claim(ctx, job)
	if err != nil {
		return false, err
	}
	if work != nil {
		work()
	}
	return true, c.Release()
}

// tickJobs plays a scheduler of n jobs (job-0 ...) each ticking every
// period on r, until the returned function, which waits for them, is
// called.
func tickJobs(r *runonce.Runner, n int, period time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(period):
				}
				_ = r.Do(context.Background(), fmt.Sprint("job-", i), func(context.Context) error { return nil })
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

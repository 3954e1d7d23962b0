package runonce

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
)

// A removal never makes a tick run twice, whatever each instance's
// options.

// testRunner is a Runner on a session of its own on servers.
func testRunner(t *testing.T, servers []string, root string, opts ...Option) *Runner {
	t.Helper()
	r, err := New(zktest.Connect(t, servers), root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// claimTick claims tick of job on r; it reports whether r runs it, and
// releases the claim.
func claimTick(ctx context.Context, r *Runner, job string, tick time.Time) (bool, error) {
	c, err := r.ClaimTick(ctx, job, tick)
	if err != nil {
		return false, err
	}
	return true, c.Release()
}

// runTwoTicks has a run ticks 1 and 2 of job, b attempt tick 1 (its
// options written to the job's record), and returns tick 2.
func runTwoTicks(t *testing.T, ctx context.Context, a, b *Runner, job string, w time.Duration) time.Time {
	t.Helper()
	t1 := time.Now().Round(0)
	if ran, err := claimTick(ctx, a, job, t1); !ran {
		t.Fatalf("a's tick 1: %v", err)
	}
	if ran, err := claimTick(ctx, b, job, t1); ran || !errors.Is(err, ErrSkipped) {
		t.Fatalf("b's tick 1: ran %v, %v; want it skipped", ran, err)
	}
	time.Sleep(w + 100*time.Millisecond)
	t2 := time.Now().Round(0)
	if ran, err := claimTick(ctx, a, job, t2); !ran {
		t.Fatalf("a's tick 2: %v", err)
	}
	return t2
}

// removeAfterRelease is RemoveJob right after a run's Release: the run's
// lock node is deleted by its session's writer a moment after Release
// returns, and RemoveJob meets it held until then (ErrLockHeld, its doc:
// idle run 137 of issue 72's code met it in TestRemoveCutsAnAttempt). It
// calls again, for at most 2 s, as runner_test's claims do.
func removeAfterRelease(ctx context.Context, r *Runner, job string) error {
	err := r.RemoveJob(ctx, job)
	for deadline := time.Now().Add(2 * time.Second); errors.Is(err, ErrLockHeld) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		err = r.RemoveJob(ctx, job)
	}
	return err
}

// TestRemoveWithALongerTimeout: a cleanup with the defaults (500 ms, 1 s)
// removes a job while b, an instance with a 3-s lock timeout, decides a
// tick a ran, its read held 1.5 s by its connection (a proxy's stall).
// RemoveJob aged the last run by the lock timeout its last writer recorded
// (a's 1 s): it deleted the run node while b still decided, b found none,
// took the tick as a first run, and ran it again; RemoveJob returned nil.
func TestRemoveWithALongerTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a claim stalled through a proxy, about 2 s")
	}
	root := zktest.Path(t)
	p, err := faultproxy.New(zktest.Servers(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	a := testRunner(t, zktest.Servers(t), root)
	b := testRunner(t, []string{p.Addr()}, root, WithLockTimeout(3*time.Second))
	cleanup := testRunner(t, zktest.Servers(t), root)
	ctx := zktest.Context(t, 30*time.Second)
	t2 := runTwoTicks(t, ctx, a, b, "job", DefaultWindow)
	p.Stall()
	type result struct {
		ran bool
		err error
	}
	bs := make(chan result, 1)
	go func() {
		ran, err := claimTick(ctx, b, "job", t2)
		bs <- result{ran, err}
	}()
	time.Sleep(50 * time.Millisecond) // b's read sent, held
	removed := make(chan error, 1)
	go func() { removed <- removeAfterRelease(ctx, cleanup, "job") }()
	var rmErr error
	select {
	case rmErr = <-removed:
		p.Unstall()
	case <-time.After(1500 * time.Millisecond):
		p.Unstall()
		rmErr = <-removed
	}
	got := <-bs
	t.Logf("RemoveJob: %v; b's attempt of the tick a ran: ran %v, %v", rmErr, got.ran, got.err)
	if got.ran {
		t.Errorf("b ran the tick a ran: a tick run twice (RemoveJob: %v)", rmErr)
	}
	if rmErr != nil && !errors.Is(rmErr, ErrJobActive) {
		t.Errorf("RemoveJob: %v, want nil or ErrJobActive", rmErr)
	}
}

// TestRemoveMeetsAStalledClaim: the fleet's timeouts equal (the defaults),
// b's claim of the tick a ran stalls between its start and its read (its
// Runner's lock held by the test, as a stopped process holds it): its read
// came after the cleanup's delete, found no node, and the tick ran again.
// A claim older than its own lock timeout is refused.
func TestRemoveMeetsAStalledClaim(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a claim stalled past its lock timeout, about 4 s")
	}
	root := zktest.Path(t)
	a := testRunner(t, zktest.Servers(t), root)
	b := testRunner(t, zktest.Servers(t), root)
	cleanup := testRunner(t, zktest.Servers(t), root)
	ctx := zktest.Context(t, 30*time.Second)
	t2 := runTwoTicks(t, ctx, a, b, "job", DefaultWindow)
	b.mu.Lock() // b's claim stalls where it looks the job up
	type result struct {
		ran bool
		err error
	}
	bs := make(chan result, 1)
	go func() {
		ran, err := claimTick(ctx, b, "job", t2)
		bs <- result{ran, err}
	}()
	time.Sleep(50 * time.Millisecond)
	rmErr := removeAfterRelease(ctx, cleanup, "job")
	b.mu.Unlock()
	got := <-bs
	t.Logf("RemoveJob: %v; b's stalled attempt of the tick a ran: ran %v, %v", rmErr, got.ran, got.err)
	if got.ran {
		t.Errorf("b ran the tick a ran: a tick run twice (RemoveJob: %v)", rmErr)
	}
}

// TestRemoveCutsAnAttempt: b's attempt of a later tick reads the run node,
// then RemoveJob deletes it before b's write (b paused between the two by
// a hook): the write found no node, and the attempt failed ("write run
// node: ... node does not exist"), the tick lost with RemoveJob returning
// nil. An attempt cut by the delete is a conflict: read again, decided
// afresh.
func TestRemoveCutsAnAttempt(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ticks and a RemoveJob between them, about 7 s")
	}
	root := zktest.Path(t)
	const w = 200 * time.Millisecond
	a := testRunner(t, zktest.Servers(t), root, WithWindow(w))
	b := testRunner(t, zktest.Servers(t), root, WithWindow(w), WithLockTimeout(3*time.Second))
	cleanup := testRunner(t, zktest.Servers(t), root, WithWindow(w))
	ctx := zktest.Context(t, 30*time.Second)
	runTwoTicks(t, ctx, a, b, "job", w)
	// b's first attempt wrote its lock timeout in the job's record.
	removed := make(chan error, 1)
	removing := make(chan struct{}) // closed once RemoveJob returned
	go func() {
		removed <- removeAfterRelease(ctx, cleanup, "job")
		close(removing)
	}()
	conn := zktest.Connect(t, zktest.Servers(t)).Conn()
	dir, err := a.dir("job")
	if err != nil {
		t.Fatal(err)
	}
	// b's attempt of tick 3, late in the removal's wait (twice the window
	// and b's lock timeout, the largest recorded: 6.4 s), within its own
	// lock timeout of its end, so that its write after the delete is in
	// time. (The version that failed on e876833 began 0.9 s into it: the
	// wait was then the window and the last writer's lock timeout, 1.2 s.)
	time.Sleep(2*w + 3*time.Second + 500*time.Millisecond)
	// The hook holds b between its read and its write until the delete has
	// come, however late the machine makes it, or RemoveJob returned.
	cut := false
	testHookAfterRead = func(string) {
		for over := false; !over; {
			select {
			case <-removing: // one look more: the delete came before the return
				over = true
			case <-ctx.Done():
				over = true
			case <-time.After(10 * time.Millisecond):
			}
			if ok, _, _ := conn.Exists(dir + "/run"); !ok {
				cut = true
				return
			}
		}
	}
	defer func() { testHookAfterRead = nil }()
	_, err = claimTick(ctx, b, "job", time.Now().Round(0))
	testHookAfterRead = nil
	rmErr := <-removed
	t.Logf("b's attempt cut by the delete: %v, its claim: %v; RemoveJob: %v", cut, err, rmErr)
	if !cut {
		t.Fatalf("the run node stood until RemoveJob returned (%v): the delete never came between b's read and its write", rmErr)
	}
	if outcomeOf(err) == Failed {
		t.Errorf("an attempt cut by the delete failed: %v", err)
	}
}

package runonce_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestOverloadToldAsOverload: a fleet too busy for its jobs. x's Locks
// take 150 ms (its process stalls between the run node's read and write),
// y's scheduler fires 250 ms late, beyond the 200 ms window: each tick
// runs on both. x said "the fleet's timers for it are further apart than
// its window; start the job on a common boundary", where the timers were
// on one: x measures its own Locks late, and says overload, with what to
// change, once for the job and once in all.
func TestOverloadToldAsOverload(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ticks of an overloaded fleet, about 4 s")
	}
	root := zktest.Path(t)
	const w, p = 200 * time.Millisecond, 500 * time.Millisecond
	sx, logs := logged(t, zktest.Servers(t))
	x, err := runonce.New(sx, root, runonce.WithWindow(w), runonce.WithInstanceName("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	y, _ := newRunner(t, root, runonce.WithWindow(w), runonce.WithInstanceName("y"))
	var slow atomic.Bool
	defer runonce.SetAfterReadHook(func(string) {
		if slow.Load() {
			time.Sleep(150 * time.Millisecond)
		}
	})()
	ctx := zktest.Context(t, 30*time.Second)
	start := time.Now().Add(100 * time.Millisecond)
	runs := 0
	for k := range 8 {
		tick := start.Add(time.Duration(k) * p)
		time.Sleep(time.Until(tick))
		slow.Store(true)
		ran, _ := runOnce(ctx, x, "job", nil)
		slow.Store(false)
		time.Sleep(time.Until(tick.Add(250 * time.Millisecond)))
		ranY, _ := runOnce(ctx, y, "job", nil)
		runs += map[bool]int{true: 1}[ran] + map[bool]int{true: 1}[ranY]
	}
	lines := runonceLines(logs.String())
	t.Logf("%d runs in 8 ticks; x's lines:\n%s", runs, strings.Join(lines, "\n"))
	out := strings.Join(lines, "\n")
	if !strings.Contains(out, "overload") {
		t.Error("x did not say overload")
	}
	for _, other := range []string{"start the job on a common boundary", "lock failed", "ZooKeeper unreachable"} {
		if strings.Contains(out, other) {
			t.Errorf("x told the overload as something else: %q", other)
		}
	}
}

// TestOverloadEnds: an overload (Locks past their timeout while ZooKeeper
// answered) is said when it begins and, once Locks have been quick for the
// settling time (2 s here, 30 s by default), when it ends: two lines for
// the Runner, and one for the job. Quick is a Claim latency and a
// scheduling latency together under a quarter of the window: the job's
// window is 1 s, so that the end needs them under 250 ms. With a 100-ms
// window (25 ms) a loaded make test's claims, at 19-23 ms when it ended,
// kept the overload on past the wait (1 of 4 beside three busy loops).
func TestOverloadEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an overload and its 2-s settling time, about 3 s")
	}
	defer runonce.SetOverloadSettle(2 * time.Second)()
	s, logs := logged(t, zktest.Servers(t))
	const window = time.Second
	l, err := runonce.New(s, zktest.Path(t), runonce.WithWindow(window),
		runonce.WithLockTimeout(400*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var stall atomic.Bool
	defer runonce.SetAfterReadHook(func(string) {
		if stall.Load() {
			time.Sleep(500 * time.Millisecond)
		}
	})()
	ctx := zktest.Context(t, 30*time.Second)
	stall.Store(true)
	for range 3 {
		_, _ = runOnce(ctx, l, "job", nil)
	}
	stall.Store(false)
	zktest.Eventually(t, 20*time.Second, "the overload's end", func() bool {
		time.Sleep(runonce.AfterWindow(window))
		_, _ = runOnce(ctx, l, "job", nil)
		return strings.Contains(logs.String(), "no longer overloaded")
	})
	lines := runonceLines(logs.String())
	t.Logf("the Runner's %d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	if len(lines) != 3 || !strings.Contains(lines[0], "overloaded") || !strings.Contains(lines[2], "no longer overloaded") {
		t.Errorf("%d lines, want 3: overloaded, the job's, no longer overloaded", len(lines))
	}
}

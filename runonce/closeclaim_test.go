package runonce

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// TestCloseBetweenReadAndWrite: Close lands between a claim's read of the
// run node and its write. The write went out and counted as the tick's
// run, the claim then failed on its closed lock ("zklock: lock closed",
// warned as "run skipped: lock failed"), and the other instance skipped
// "this tick already ran": the tick ran nowhere. Now a claim in flight at
// Close either finishes (writes and runs) or leaves the tick unmarked,
// and says ErrClosed: here it leaves it, and b runs the tick.
func TestCloseBetweenReadAndWrite(t *testing.T) {
	root := zktest.Path(t)
	var logs zktest.SyncBuffer
	a, err := New(zktest.Connect(t, zktest.Servers(t), zklock.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))), root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(zktest.Connect(t, zktest.Servers(t)), root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := zktest.Context(t, 20*time.Second)
	if err := b.Do(ctx, "job", noop); err != nil { // the run node, a tick ago
		t.Fatal(err)
	}
	time.Sleep(DefaultWindow + 300*time.Millisecond)
	testHookAfterRead = func(string) { _ = a.Close() }
	_, errA := a.Claim(ctx, "job")
	testHookAfterRead = nil
	errB := b.Do(ctx, "job", noop)
	t.Logf("a: %v; b: %v", errA, errB)
	if errA != nil && errB != nil {
		t.Errorf("the tick ran nowhere: a's claim %v, b's %v", errA, errB)
	}
	if errA != nil && !errors.Is(errA, ErrClosed) {
		t.Errorf("a's claim: %v, want ErrClosed", errA)
	}
	if strings.Contains(logs.String(), "lock failed") {
		t.Errorf("a close logged as a failure:\n%s", logs.String())
	}
}

// stormWindow is the storms window: short, for short rounds.
const stormWindow = 50 * time.Millisecond

// TestCloseClaimTickStorm: Close racing a claim at random moments, round
// after round, with a second instance claiming the same tick after it:
// the tick runs on one of the two, never on neither.
func TestCloseClaimTickStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a storm of rounds, about 11 s")
	}
	ctx := zktest.Context(t, 90*time.Second)
	sa, sb := zktest.Connect(t, zktest.Servers(t)), zktest.Connect(t, zktest.Servers(t))
	lost := 0
	const rounds = 40
	for round := range rounds {
		root := zktest.Path(t) + "/" + strconv.Itoa(round)
		a, err := New(sa, root, WithWindow(stormWindow))
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(sb, root, WithWindow(stormWindow))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Do(ctx, "job", noop); err != nil {
			t.Fatal(err)
		}
		time.Sleep(stormWindow + 150*time.Millisecond)
		var errA error
		ranA := false
		var wg sync.WaitGroup
		wg.Go(func() { errA = a.Do(ctx, "job", func(context.Context) error { ranA = true; return nil }) })
		time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
		_ = a.Close()
		zktest.Wait(t, "a's Do", &wg)
		errB := b.Do(ctx, "job", noop)
		if !ranA && errB != nil {
			lost++
			t.Logf("round %d: the tick ran nowhere: a %v; b %v", round, errA, errB)
		}
		_ = b.Close()
	}
	if lost > 0 {
		t.Errorf("%d of %d rounds: the tick ran nowhere", lost, rounds)
	}
}

// TestClaimOnAClosedSession: a claim after the program closed its session
// was told "ZooKeeper unreachable: runs are skipped until it answers" (it
// never will): it is told once as the session's close, and no outage.
func TestClaimOnAClosedSession(t *testing.T) {
	var logs zktest.SyncBuffer
	s := zktest.Connect(t, zktest.Servers(t), zklock.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	r, err := New(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := zktest.Context(t, 10*time.Second)
	if err := r.Do(ctx, "job", noop); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	for range 3 {
		time.Sleep(AfterWindow(DefaultWindow))
		err := r.Do(ctx, "job", noop)
		if err == nil {
			t.Fatal("a run on a closed session")
		}
		// The log said the session is closed, but the error was
		// go-zookeeper's "zk: connection closed".
		if !errors.Is(err, zklock.ErrSessionClosed) {
			t.Errorf("a claim on a closed session: %v; want an error matching zklock.ErrSessionClosed", err)
		}
	}
	out := logs.String()
	if strings.Contains(out, "ZooKeeper unreachable") || strings.Count(out, "the ZooKeeper session is closed") != 1 {
		t.Errorf("a closed session told as an outage, or not once:\n%s", out)
	}
}

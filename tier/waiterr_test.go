package tier_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// A wait that times out says, in its message alone (what a log line
// shows), which lock, which tier, how long, and who holds it: in tier 2
// the holder's node, its creator (host and pid) and session; in tier 1
// that a goroutine of this process holds it, and on which node. The
// message of the old code was "tier: context deadline exceeded" in tier 2
// and bare "context deadline exceeded" in tier 1.
func TestTimedOutAcquireSaysWhichLockAndWho(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	s1, s2 := connect(t, servers), connect(t, servers)
	holder := newLock(t, s1, p)
	held, err := holder.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release(held)
	ps, err := zklock.ListParticipants(ctxT(t, 10*time.Second), s1, p)
	if err != nil || len(ps) != 1 {
		t.Fatalf("participants %v, %v", ps, err)
	}
	node := ps[0].Node
	pid := fmt.Sprintf("%d@", os.Getpid())
	sid := fmt.Sprintf("0x%x", s1.SessionID())

	// Tier 2: another process (session) holds it.
	wait, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = newLock(t, s2, p).Acquire(wait)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("tier 2: %v, want DeadlineExceeded", err)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{p, "tier 2", "waited", "1 ahead", path.Base(node), pid, sid, "context deadline exceeded"} {
		if !strings.Contains(msg, want) {
			t.Errorf("tier 2: %q does not say %q", msg, want)
		}
	}

	// Tier 1: another goroutine of this process holds it.
	wait, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = holder.Acquire(wait)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("tier 1: %v, want DeadlineExceeded", err)
	}
	msg = err.Error()
	t.Log(msg)
	for _, want := range []string{p, "tier 1", "goroutine of this process", path.Base(node), "context deadline exceeded"} {
		if !strings.Contains(msg, want) {
			t.Errorf("tier 1: %q does not say %q", msg, want)
		}
	}
}

// The same, as values: a *WaitError with the path, the tier, the wait,
// the holder; in tier 2 zklock's *WaitError behind it names the watched
// node and its creator's session; a registry's key is named; the
// observer's Failed event says where the wait ended.
func TestWaitErrorValues(t *testing.T) {
	servers := zktest.Servers(t)
	root := zktest.Path(t)
	s1, s2 := connect(t, servers), connect(t, servers)
	r1, err := tier.NewRegistry(s1, root)
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	failed := make(chan tier.Event, 4)
	r2, err := tier.NewRegistry(s2, root, tier.WithObserver(func(ev tier.Event) {
		if ev.Kind == tier.Failed {
			failed <- ev
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	held, err := r1.Acquire(ctxT(t, 10*time.Second), "report")
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Release(held)

	wait, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = r2.Acquire(wait, "report")
	var we *tier.WaitError
	if !errors.As(err, &we) {
		t.Fatalf("%v (%T): not a *tier.WaitError", err, err)
	}
	if we.Path != root+"/report" || we.Key != "report" || we.Tier != tier.TierZooKeeper || we.Waited < 250*time.Millisecond ||
		!errors.Is(we, context.DeadlineExceeded) || !strings.Contains(err.Error(), `key "report"`) {
		t.Fatalf("WaitError %+v (%v)", *we, err)
	}
	select {
	case ev := <-failed:
		if ev.Tier != tier.TierZooKeeper || !errors.Is(ev.Err, context.DeadlineExceeded) {
			t.Fatalf("Failed event %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no Failed event")
	}

	// zklock's own error, under it: the watched node and its session.
	zl := zktest.NewLock(t, s2, root+"/report")
	wait, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = zl.Acquire(wait)
	var zw *zklock.WaitError
	if !errors.As(err, &zw) || zw.Path != root+"/report" || zw.Ahead != 1 || zw.Watched == nil ||
		zw.Watched.Owner != s1.SessionID() || zw.Watched.Node != zw.Holder || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("zklock: %v (%+v)", err, zw)
	}
	if got := zklock.ParticipantID(zw.Watched.Data); !strings.HasPrefix(got, fmt.Sprintf("%d@", os.Getpid())) {
		t.Fatalf("participant %q", got)
	}

	// Close ends a wait in the gate: ErrClosed, as a WaitError of tier 1.
	local := newLock(t, s1, zktest.Path(t))
	lh, err := local.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer local.Release(lh)
	done := make(chan error, 1)
	go func() {
		_, err := local.Acquire(context.Background())
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	local.Close()
	err = <-done
	if !errors.As(err, &we) || we.Tier != tier.TierGate || !errors.Is(err, tier.ErrClosed) {
		t.Fatalf("closed in the gate: %v", err)
	}
	// A call on a closed lock waits for nothing: ErrClosed alone.
	if _, err := local.Acquire(context.Background()); err != tier.ErrClosed {
		t.Fatalf("on a closed lock: %v, want ErrClosed itself", err)
	}
}

// A read/write lock's and a semaphore's waits say the same.
func TestRecipeWaitErrors(t *testing.T) {
	servers := zktest.Servers(t)
	s1, s2 := connect(t, servers), connect(t, servers)
	p := zktest.Path(t)
	rw1, err := tier.NewRWLock(s1, p)
	if err != nil {
		t.Fatal(err)
	}
	defer rw1.Close()
	rw2, err := tier.NewRWLock(s2, p)
	if err != nil {
		t.Fatal(err)
	}
	defer rw2.Close()
	held, err := rw1.RLock(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer rw1.Release(held)
	wait, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = rw2.Lock(wait)
	var we *tier.WaitError
	if !errors.As(err, &we) || we.Tier != tier.TierZooKeeper || we.Path != p || !strings.Contains(we.Holder, "held by") {
		t.Fatalf("writer behind a reader of another process: %v", err)
	}
	// A writer of this process behind a reader of this process: tier 1.
	wait, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = rw1.Lock(wait)
	if !errors.As(err, &we) || we.Tier != tier.TierGate || !strings.Contains(we.Holder, "1 readers of this process") {
		t.Fatalf("writer behind a local reader: %v", err)
	}

	sp := zktest.Path(t)
	sem, err := tier.NewSemaphore(s1, sp, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer sem.Close()
	sh, err := sem.Acquire(ctxT(t, 10*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer sem.Release(sh)
	wait, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = sem.Acquire(wait, 1)
	if !errors.As(err, &we) || we.Tier != tier.TierGate || !strings.Contains(err.Error(), "1 of 1 permits") {
		t.Fatalf("semaphore: %v", err)
	}
}

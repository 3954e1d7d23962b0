//go:build tierlocktrace

package replay

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// Real runs against a real ZooKeeper, recorded (the tierlocktrace tag) and
// replayed: each must replay clean.
//
//	go test -tags tierlocktrace -run TestRecorded ./internal/replay/

// recordRun records what run does and replays the trace, failing t on a
// step the model does not allow, or when the trace has no step of one of
// the kinds want (what the run is meant to show).
func recordRun(t *testing.T, run func(), want ...trace.Kind) {
	t.Helper()
	dir := t.TempDir()
	r, err := trace.Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	run()
	if err := trace.Stop(); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, filepath.Base(r.FileName()))
	c := New()
	if err := c.ReplayFile(name); err != nil {
		t.Fatal(err)
	}
	steps, err := trace.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[trace.Kind]bool{}
	for _, st := range steps {
		seen[st.Kind] = true
	}
	for _, k := range want {
		if !seen[k] {
			t.Errorf("no %s step recorded", k)
		}
	}
	res := c.Result()
	for _, v := range res.Violations {
		t.Errorf("refused: %v", v)
	}
	t.Logf("%d steps, %d holds, %d states replayed; renewals shown by a handshake %d, by a chain %d", res.Steps,
		res.Holds, res.States, res.Renews.Handshake, res.Renews.Chain)
	if res.Holds == 0 {
		t.Error("no hold recorded")
	}
}

// An acquisition and its release, then a second one on the same path
// whose create carries the first node's delete, on zklock alone.
func TestRecordedAcquireRelease(t *testing.T) {
	recordRun(t, func() {
		s := zktest.Connect(t, zktest.Servers(t))
		l := zktest.NewLock(t, s, zktest.Path(t))
		ctx := zktest.Context(t, 10*time.Second)
		for range 3 {
			h, err := l.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Release(); err != nil {
				t.Fatal(err)
			}
		}
	}, trace.Release, trace.DelAdd)
}

// Two sessions on one path: the waiter watches the holder's node, hears
// of its delete and is granted with a greater token.
func TestRecordedContended(t *testing.T) {
	recordRun(t, func() {
		s1, s2 := zktest.Connect(t, zktest.Servers(t)), zktest.Connect(t, zktest.Servers(t))
		p := zktest.Path(t)
		l1, l2 := zktest.NewLock(t, s1, p), zktest.NewLock(t, s2, p)
		ctx := zktest.Context(t, 20*time.Second)
		h1, err := l1.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *zklock.Hold, 1)
		go func() {
			h, err := l2.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- h
		}()
		zktest.Eventually(t, 10*time.Second, "the waiter queued", func() bool {
			return len(zktest.Children(t, s1.Conn(), p)) == 2
		})
		if err := h1.Release(); err != nil {
			t.Fatal(err)
		}
		if h2 := <-got; h2 != nil {
			_ = h2.Release()
		}
	}, trace.Event, trace.Turn)
}

// The gate: a local waiter is handed gate and node (tier.WithHandoff),
// then a local waiter with no hand-off left queues on ZooKeeper.
func TestRecordedGateHandoff(t *testing.T) {
	recordRun(t, func() {
		s := zktest.Connect(t, zktest.Servers(t))
		l, err := tier.New(s, zktest.Path(t), tier.WithHandoff(1, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		ctx := zktest.Context(t, 20*time.Second)
		held, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 2)
		for range 2 {
			go func() {
				h, err := l.Acquire(ctx)
				if err == nil {
					time.Sleep(5 * time.Millisecond)
					err = l.Release(h)
				}
				done <- err
			}()
		}
		time.Sleep(100 * time.Millisecond) // both at the gate
		if err := l.Release(held); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}, trace.GatePass, trace.Handoff)
}

// A holder cut off (its traffic paused) is told of the loss by its
// lease's lapse or the disconnection, before the waiter of another session
// is granted; then its session expires and it queues again in a new one.
func TestRecordedLossBeforeGrant(t *testing.T) {
	recordRun(t, func() {
		servers := zktest.Servers(t)
		px, err := faultproxy.New(servers[0])
		if err != nil {
			t.Fatal(err)
		}
		defer px.Close()
		hs := zktest.Connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(2*time.Second))
		ws := zktest.Connect(t, servers)
		p := zktest.Path(t)
		holder, waiter := zktest.NewLock(t, hs, p), zktest.NewLock(t, ws, p)
		ctx := zktest.Context(t, 30*time.Second)
		h1, err := holder.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *zklock.Hold, 1)
		go func() {
			h, err := waiter.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- h
		}()
		zktest.Eventually(t, 5*time.Second, "waiter queued", func() bool { return len(zktest.Children(t, ws.Conn(), p)) == 2 })
		px.Pause()
		h2 := <-got
		px.Resume()
		if h2 != nil {
			_ = h2.Release()
		}
		if err := h1.Release(); !errors.Is(err, zklock.ErrLockLost) {
			t.Errorf("holder's Release: %v, want ErrLockLost", err)
		}
		h3, err := holder.Acquire(ctx) // in the new session
		if err != nil {
			t.Fatal(err)
		}
		_ = h3.Release()
	}, trace.Lose, trace.Lapse)
}

// A wait given up: its node's delete queued, the gate left.
func TestRecordedCancelledWait(t *testing.T) {
	recordRun(t, func() {
		s1, s2 := zktest.Connect(t, zktest.Servers(t)), zktest.Connect(t, zktest.Servers(t))
		p := zktest.Path(t)
		l1 := zktest.NewLock(t, s1, p)
		l2, err := tier.New(s2, p)
		if err != nil {
			t.Fatal(err)
		}
		h1, err := l1.Acquire(zktest.Context(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if _, err := l2.Acquire(ctx); err == nil {
			t.Fatal("acquired a held lock")
		}
		_ = h1.Release()
		_ = l2.Close()
	}, trace.GateLeave)
}

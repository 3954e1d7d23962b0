package runonce_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// TestLeaderChangeRebases, on a real 3-server ensemble: a job runs, the
// ensemble's leader is killed and another is elected. The first attempt
// after that skips although the run is older than the window (1 ms here):
// its write lands in a new epoch, whose leader's clock cannot be compared
// with the one that dated the run, so it rebases the record on the new
// clock (the old rule ran it). The next attempt, in the same epoch, runs.
func TestLeaderChangeRebases(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private ensemble")
	}
	zc := zktest.Ensemble(t, 3)
	ctx := zktest.Context(t, 90*time.Second)
	leader, err := zc.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// On a follower, so that the session outlives the leader.
	s := zktest.Connect(t, []string{zc.Addr((leader + 1) % 3)}, zklock.WithSessionTimeout(10*time.Second))
	l, err := runonce.New(s, "/gocron-epoch", runonce.WithWindow(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if ran, err := runOnce(ctx, l, "job", nil); !ran {
		t.Fatalf("first run: %v", err)
	}
	killed := time.Now()
	if err := zc.Kill(leader); err != nil {
		t.Fatal(err)
	}
	for {
		ran, err := runOnce(ctx, l, "job", nil)
		if ran {
			t.Fatalf("ran %v after the leader's kill, across the leader change", time.Since(killed))
		}
		if errors.Is(err, runonce.ErrAlreadyRan) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no answer after the leader's kill: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("first attempt in the new epoch skipped %v after the kill", time.Since(killed).Round(time.Millisecond))
	time.Sleep(runonce.AfterWindow(time.Millisecond))
	if ran, err := runOnce(ctx, l, "job", nil); !ran {
		t.Fatalf("the next attempt, in the new epoch: %v", err)
	}
}

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

// TestCloseBeforeTheRunIsStored: Close runs after Claim took the job's
// lock but before it stored the run, so Close finds no run to mark and
// ends the hold (zklock.Lock.Close). The run then learnt of it as a loss:
// its Release logged "lock lost during the run" and returned the loss,
// where Close's doc and Release's promise ErrClosed and no warning. Close
// now waits for a claim that wrote (close.go): called there, it ends the
// run once stored.
func TestCloseBeforeTheRunIsStored(t *testing.T) {
	var logs zktest.SyncBuffer
	s := zktest.Connect(t, zktest.Servers(t), zklock.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	r, err := New(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	testHookAfterTake = func() {
		go func() {
			_ = r.Close()
			close(closed)
		}()
		time.Sleep(20 * time.Millisecond) // Close waits for this claim
	}
	defer func() { testHookAfterTake = nil }()
	c, err := r.Claim(zktest.Context(t, 10*time.Second), "job")
	if err != nil {
		t.Fatal(err) // the tick was decided: the run is this instance's
	}
	<-closed
	if cause := context.Cause(c.Context()); !errors.Is(cause, ErrClosed) {
		t.Errorf("the run's context ended with %v, want ErrClosed", cause)
	}
	if err := c.Release(); !errors.Is(err, ErrClosed) {
		t.Errorf("Release: %v, want ErrClosed", err)
	}
	if strings.Contains(logs.String(), "lock lost") {
		t.Errorf("a Close was logged as a loss:\n%s", logs.String())
	}
}

// TestCloseWhileTheRunEnds: Close runs while a run's Release is under
// way, after the run left its job (so Close finds no run to mark) and
// before its hold is released, so that Close ends the hold (zklock's
// Lock.Close) under the Release. Release returned the loss, "zklock: lock
// lost: zklock: lock closed", and logged "lock lost during the run" (once
// in a loaded make test's TestCloseClaimStorm); a hold its Runner's Close
// ended is a close, as in TestCloseBeforeTheRunIsStored.
func TestCloseWhileTheRunEnds(t *testing.T) {
	var logs zktest.SyncBuffer
	s := zktest.Connect(t, zktest.Servers(t), zklock.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	r, err := New(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Claim(zktest.Context(t, 10*time.Second), "job")
	if err != nil {
		t.Fatal(err)
	}
	testHookBeforeRelease = func() { _ = r.Close() }
	defer func() { testHookBeforeRelease = nil }()
	if err := c.Release(); !errors.Is(err, ErrClosed) {
		t.Errorf("Release: %v, want ErrClosed", err)
	}
	if strings.Contains(logs.String(), "lock lost") {
		t.Errorf("a Close was logged as a loss:\n%s", logs.String())
	}
}

// TestCloseClaimStorm: Close racing Claims of several jobs, at random
// moments, round after round: a run's Release is nil or ErrClosed, never
// a loss, and nothing is logged as one.
func TestCloseClaimStorm(t *testing.T) {
	var logs zktest.SyncBuffer
	s := zktest.Connect(t, zktest.Servers(t), zklock.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	ctx := zktest.Context(t, 60*time.Second)
	for round := range 40 {
		r, err := New(s, zktest.Path(t)+"/"+strconv.Itoa(round))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for k := range 4 {
			wg.Go(func() {
				c, err := r.Claim(ctx, "job-"+strconv.Itoa(k))
				if err != nil {
					return // closed first, or skipped
				}
				if err := c.Release(); err != nil && !errors.Is(err, ErrClosed) {
					t.Errorf("round %d: Release: %v, want nil or ErrClosed", round, err)
				}
			})
		}
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		_ = r.Close()
		zktest.Wait(t, "the claims", &wg)
	}
	if strings.Contains(logs.String(), "lock lost") {
		t.Errorf("a Close was logged as a loss:\n%s", logs.String())
	}
}

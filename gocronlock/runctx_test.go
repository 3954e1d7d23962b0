package gocronlock_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// TestUnlockAfterClose (issue 37, item 6): Close releases the lock of a
// run still going. The run's context tells the job at once (cause
// ErrClosed), and the run's Unlock returns an error matching ErrClosed,
// with no warning of a lost lock: the program closed the Locker itself.
func TestUnlockAfterClose(t *testing.T) {
	var logs zktest.SyncBuffer
	s := zktest.Connect(t, zktest.Servers(t), zklock.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	l, err := gocronlock.NewLocker(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := zktest.Context(t, 10*time.Second)
	held, err := l.Lock(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	run := l.RunContext("job")
	if run.Err() != nil {
		t.Fatalf("the run's context during the run: %v", context.Cause(run))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !zktest.IsClosed(run.Done()) || !errors.Is(context.Cause(run), runonce.ErrClosed) {
		t.Errorf("the run's context after Close: %v, want cancelled with ErrClosed", context.Cause(run))
	}
	if err := held.Unlock(ctx); !errors.Is(err, runonce.ErrClosed) {
		t.Errorf("Unlock after Close: %v, want ErrClosed", err)
	}
	if strings.Contains(logs.String(), "lost") {
		t.Errorf("Close was logged as a loss:\n%s", logs.String())
	}
}

// TestRunContext: a job reads its run's context from the Locker with its
// name; the context carries the values of the job's own context (the one
// gocron passed to Lock), ends at Unlock, and ends when the run's lock is
// lost (an operator deletes its node), with the loss as its cause.
func TestRunContext(t *testing.T) {
	root := zktest.Path(t)
	l, s := newLocker(t, root, runonce.WithWindow(time.Millisecond))
	type key struct{}
	ctx := context.WithValue(zktest.Context(t, 20*time.Second), key{}, "job's")
	if err := l.RunContext("job").Err(); err == nil {
		t.Error("RunContext without a run: a live context")
	}
	held, err := l.Lock(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	run := l.RunContext("job")
	if run.Value(key{}) != "job's" || run.Err() != nil {
		t.Fatalf("run context: value %v, err %v", run.Value(key{}), run.Err())
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if run.Err() == nil {
		t.Error("the run's context outlived Unlock")
	}
	time.Sleep(gocronlock.AfterWindow(time.Millisecond))
	if held, err = l.Lock(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	run = l.RunContext("job")
	nodes := zktest.Children(t, s.Conn(), root+"/job/lock")
	if len(nodes) != 1 {
		t.Fatalf("lock nodes %v", nodes)
	}
	if err := s.Conn().Delete(root+"/job/lock/"+nodes[0], -1); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 5*time.Second, "the run's context cancelled by the loss", func() bool { return run.Err() != nil })
	if !errors.Is(context.Cause(run), zklock.ErrLockLost) {
		t.Errorf("cause %v, want ErrLockLost", context.Cause(run))
	}
	if err := held.Unlock(ctx); !errors.Is(err, zklock.ErrLockLost) {
		t.Errorf("Unlock of a lost run: %v, want ErrLockLost", err)
	}
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// One real ZooKeeper for the package; goleak checks nothing is left running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

// result is what one run of the command left.
type result struct {
	code           int
	stdout, stderr string
}

// tierlock runs the command's main logic with args, against the test
// server unless args name -zk themselves.
func tierlock(t *testing.T, args ...string) result {
	t.Helper()
	return tierlockCtx(t, context.Background(), args...)
}

func tierlockCtx(t *testing.T, ctx context.Context, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runContext(ctx, withZK(t, args), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

// withZK inserts -zk (the test server) after the subcommand.
func withZK(t *testing.T, args []string) []string {
	if len(args) == 0 {
		return args
	}
	for _, a := range args {
		if a == "-zk" {
			return args
		}
	}
	return append([]string{args[0], "-zk", strings.Join(zktest.Servers(t), ",")}, args[1:]...)
}

func (r result) want(t *testing.T, code int, in ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range in {
		if !strings.Contains(r.stdout+r.stderr, s) {
			t.Fatalf("output lacks %q\nstdout:\n%s\nstderr:\n%s", s, r.stdout, r.stderr)
		}
	}
}

func connect(t *testing.T, opts ...zklock.SessionOption) *zklock.Session {
	t.Helper()
	return zktest.Connect(t, zktest.Servers(t), opts...)
}

var newLock = zktest.NewLock

// acquire takes l, failing the test if it cannot.
func acquire(t *testing.T, ctx context.Context, l *zklock.Lock) *zklock.Hold {
	t.Helper()
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// acquired is what an Acquire run in the background returned.
type acquired struct {
	h   *zklock.Hold
	err error
}

// acquireAsync starts an Acquire of l and returns where its outcome will
// be.
func acquireAsync(ctx context.Context, l *zklock.Lock) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		h, err := l.Acquire(ctx)
		ch <- acquired{h, err}
	}()
	return ch
}

// held waits for an Acquire started by acquireAsync and returns its hold.
func held(t *testing.T, ch <-chan acquired) *zklock.Hold {
	t.Helper()
	r := <-ch
	if r.err != nil {
		t.Fatalf("acquire: %v", r.err)
	}
	return r.h
}

// waitQueue waits until path has n children. A failure names the
// children it saw last: under load it once timed out (TestBreak, a loaded
// make test) and said nothing of what the queue held.
func waitQueue(t *testing.T, s *zklock.Session, path string, n int) {
	t.Helper()
	var seen []string
	deadline := time.Now().Add(10 * time.Second)
	for seen = zktest.Children(t, s.Conn(), path); len(seen) != n; seen = zktest.Children(t, s.Conn(), path) {
		if time.Now().After(deadline) {
			t.Fatalf("queue of %s: %d nodes after 10s, want %d: %v (session %s)", path, len(seen), n, seen, s.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package zktest

import (
	"bytes"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"
)

// StuckAfter bounds the waits of AwaitClosed: a wait that lasts longer is
// a hang, reported with every goroutine's stack.
const StuckAfter = time.Minute

// DrainEvents reads a go-zookeeper connection's events (go-zookeeper
// drops those nobody reads) until it closes the channel, and returns a
// channel closed once it has: go-zookeeper closes it when the
// connection's loop has ended, after Close. Wait for it with AwaitClosed.
func DrainEvents(events <-chan zk.Event) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range events {
		}
	}()
	return done
}

// AwaitClosed waits until ch is closed. After StuckAfter it fails t,
// naming what it waited for, with the stacks of all goroutines, and
// returns: a wait in a test or its cleanup never hangs the test binary.
// go-zookeeper v1.0.4's loop can block for good in flushRequests, and its
// events channel is then never closed (see "go-zookeeper's loop stuck in
// flushRequests" in docs/operations.md).
func AwaitClosed(t testing.TB, what string, ch <-chan struct{}) {
	t.Helper()
	await(t, what, ch, StuckAfter)
}

// Await receives from ch (a closed ch gives T's zero value), as AwaitClosed
// waits: after StuckAfter it fails t with the stacks of all goroutines and
// returns ok false. It calls only t.Errorf, so a goroutine other than the
// test's may call it; the test's own goroutine stops with t.FailNow on a
// false ok when what follows needs the value.
func Await[T any](t testing.TB, what string, ch <-chan T) (v T, ok bool) {
	t.Helper()
	return await(t, what, ch, StuckAfter)
}

// Waited returns a channel closed once wg.Wait returns, for AwaitClosed.
func Waited(wg *sync.WaitGroup) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// Wait waits for wg as AwaitClosed waits for a channel: after StuckAfter
// it fails t, naming what, with the stacks of all goroutines.
func Wait(t testing.TB, what string, wg *sync.WaitGroup) {
	t.Helper()
	AwaitClosed(t, what, Waited(wg))
}

// WaitProgress waits for wg as Wait does, but for work whose length is
// its own (an explorer's schedules, on a loaded machine minutes): the hang
// it reports is progress that has stood still for StuckAfter, read from
// progress (a counter the work advances), not the wait's length.
func WaitProgress(t testing.TB, what string, wg *sync.WaitGroup, progress func() uint64) {
	t.Helper()
	waitProgress(t, what, wg, progress, StuckAfter)
}

func waitProgress(t testing.TB, what string, wg *sync.WaitGroup, progress func() uint64, d time.Duration) {
	t.Helper()
	done := Waited(wg)
	ticker := time.NewTicker(d)
	defer ticker.Stop()
	for last := progress(); ; {
		select {
		case <-done:
			return
		case <-ticker.C:
			now := progress()
			if now == last {
				t.Errorf("zktest: %s: no progress in %v (at %d); the goroutines:\n%s", what, d, now, Goroutines())
				return
			}
			last = now
		}
	}
}

func await[T any](t testing.TB, what string, ch <-chan T, d time.Duration) (v T, ok bool) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v = <-ch:
		return v, true
	case <-timer.C:
		t.Errorf("zktest: %s: still waiting after %v; the goroutines:\n%s", what, d, Goroutines())
		return v, false
	}
}

// Goroutines returns the stacks of all goroutines, as an unrecovered
// panic prints them.
func Goroutines() string {
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		return "(no goroutine profile: " + err.Error() + ")"
	}
	return b.String()
}

// PorcupineLeftovers is the goleak option for Porcupine's checking
// goroutines: a check its timeout cut short returns before they end
// (porcupine v1.3.1's checkParallel cancels them, and they stop at their
// next look at the context; makeLinkedEntries, on a long history, does not
// look). A loaded make test's goleak met one at the end of
// internal/linear's tests (run 119).
var PorcupineLeftovers = goleak.IgnoreAnyFunction("github.com/anishathalye/porcupine.checkParallel.func1")

package zktest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a testing.TB that keeps what Errorf was told.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// A wait that outlasts its bound fails the test with every goroutine's
// stack, the blocked one's included, and returns.
func TestAwaitClosedReportsAHang(t *testing.T) {
	never := make(chan struct{})
	defer close(never)
	blocked := make(chan struct{})
	go func() { blockedHere(never, blocked) }()
	<-blocked
	r := &recorder{TB: t}
	await(r, "the events channel", never, 10*time.Millisecond)
	if len(r.errs) != 1 {
		t.Fatalf("%d errors, want 1: %q", len(r.errs), r.errs)
	}
	for _, want := range []string{"the events channel: still waiting after 10ms", "zktest.blockedHere", "goroutine "} {
		if !strings.Contains(r.errs[0], want) {
			t.Errorf("the report lacks %q:\n%s", want, r.errs[0])
		}
	}
}

func blockedHere(never <-chan struct{}, blocked chan<- struct{}) {
	close(blocked)
	<-never
}

// A closed channel ends the wait without a failure; DrainEvents closes its
// channel once the events channel is closed.
func TestAwaitClosedOnClose(t *testing.T) {
	events := make(chan zk.Event, 1)
	events <- zk.Event{}
	close(events)
	r := &recorder{TB: t}
	await(r, "the events channel", DrainEvents(events), StuckAfter)
	if len(r.errs) != 0 {
		t.Fatalf("errors: %q", r.errs)
	}
}

// Await gives what the channel gives, a closed channel's zero value
// included; one that gives nothing in time fails the test with the
// stacks, as AwaitClosed does. Waited closes once the group is done.
func TestAwait(t *testing.T) {
	errs := make(chan error, 1)
	errs <- errors.New("the value")
	r := &recorder{TB: t}
	if err, ok := await(r, "an error", errs, StuckAfter); !ok || err == nil || err.Error() != "the value" {
		t.Errorf("await = %v, %v; want the value, true", err, ok)
	}
	close(errs)
	if err, ok := await(r, "an error", errs, StuckAfter); !ok || err != nil {
		t.Errorf("await of a closed channel = %v, %v; want nil, true", err, ok)
	}
	if len(r.errs) != 0 {
		t.Fatalf("errors: %q", r.errs)
	}
	never := make(chan int)
	if v, ok := await(r, "a number", never, 10*time.Millisecond); ok || v != 0 {
		t.Errorf("await with nothing sent = %v, %v; want 0, false", v, ok)
	}
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "a number: still waiting after 10ms") || !strings.Contains(r.errs[0], "goroutine ") {
		t.Errorf("the report: %q", r.errs)
	}

	var wg sync.WaitGroup
	release := make(chan struct{})
	wg.Go(func() { <-release })
	waited := Waited(&wg)
	if IsClosed(waited) {
		t.Fatal("Waited closed before the group was done")
	}
	close(release)
	AwaitClosed(t, "the group", waited)
}

// Work that goes on is waited for however long it takes; work whose
// counter stands still for the bound fails the test with the stacks.
func TestWaitProgress(t *testing.T) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	wg.Go(func() { <-release })
	var reads uint64 // each read of the counter finds it moved; the fourth ends the work
	moving := func() uint64 {
		if reads++; reads == 4 {
			close(release)
		}
		return reads
	}
	r := &recorder{TB: t}
	waitProgress(r, "the moving work", &wg, moving, time.Millisecond)
	if len(r.errs) != 0 || reads < 4 {
		t.Fatalf("work that moved at each of %d reads: errors %q", reads, r.errs)
	}
	stop := make(chan struct{})
	wg.Go(func() { <-stop })
	waitProgress(r, "the stuck work", &wg, func() uint64 { return 20 }, 10*time.Millisecond)
	close(stop)
	wg.Wait()
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "the stuck work: no progress in 10ms (at 20)") || !strings.Contains(r.errs[0], "goroutine ") {
		t.Errorf("the report: %q", r.errs)
	}
}

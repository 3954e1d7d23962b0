package mono

import (
	"sync"
	"testing"
	"time"
)

// A process stopped for a while finds its monotonic clock jumped: the
// watch measures the jump as a stall, from when it was due to wake to
// when it woke. Here its goroutine is held 1.5 s (a stop of the process
// as the watch sees it); the stall is measured to within WatchEvery, and
// no stall is measured while the watch runs on time.
func TestWatchMeasuresAStall(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: holds a goroutine 1.5 s to measure it as a stall")
	}
	unwatch := Watch()
	defer unwatch()
	defer forgetStalls()
	const hold = 1500 * time.Millisecond
	var once sync.Once
	held := make(chan time.Time, 1)
	hook := func() {
		once.Do(func() {
			start := time.Now()
			time.Sleep(hold)
			held <- start
		})
	}
	begin := time.Now()
	time.Sleep(3 * WatchEvery)
	if s, ok := StallIn(begin, time.Now()); ok {
		t.Fatalf("a stall measured while the watch ran on time: %v for %v", s.From, s.Len())
	}
	testHookWatch.Store(&hook)
	defer testHookWatch.Store(nil)
	start := <-held
	time.Sleep(3 * WatchEvery) // the watch wakes again, after the hold
	elapsed := time.Since(start)
	s, ok := StallIn(start, time.Now())
	if !ok {
		t.Fatalf("no stall measured over a hold of %v", hold)
	}
	t.Logf("held %v: a stall of %v measured", hold, s.Len())
	if s.Len() < hold-WatchEvery || s.Len() > elapsed {
		t.Errorf("a stall of %v measured over a hold of %v (%v since it began)", s.Len(), hold, elapsed)
	}
	if _, ok := StallIn(s.To.Add(time.Millisecond), time.Now()); ok {
		t.Error("a stall found after the one measured ended")
	}
}

// The watch runs while any Watch is not undone, and ends, waited for, when
// the last one is: nothing is left running (goleak, TestMain).
func TestWatchEndsWithItsLastUser(t *testing.T) {
	a, b := Watch(), Watch()
	a()
	a() // undone once only
	if watch.last.Load() == 0 {
		t.Fatal("the watch ended with a user left")
	}
	b()
	if watch.last.Load() != 0 {
		t.Fatal("the watch runs on with no user")
	}
}

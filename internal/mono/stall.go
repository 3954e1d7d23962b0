package mono

import (
	"sync"
	"sync/atomic"
	"time"
)

// A stall of the process: it was stopped (SIGSTOP, a suspended host or
// VM, a debugger) or not scheduled, and ran nothing meanwhile. Only the
// process can measure it, by its monotonic clock's jump: a goroutine that
// sleeps WatchEvery and reads the clock finds, when it wakes, the clock
// gone on by far more. The watch is that goroutine, one per process,
// running while anything asked for it (Watch: each zklock session does).
// No timer the sessions already keep can serve: the lease's renewer wakes
// every quarter of the session timeout or less often, and not at all while
// disconnected, so it would place a stall's start within seconds; a
// process has many sessions, and would measure each stall once per
// session.
//
// A stall is known from when its watch wakes, or from a query (StallIn)
// that finds the watch's last reading too old, whichever comes first: a
// line told at once after the stall, before the watch ran, still knows it.

// WatchEvery is the watch's period: a stall is measured to within it.
const WatchEvery = 100 * time.Millisecond

// StallMin is the least jump, beyond WatchEvery, that is a stall: under
// it, a busy machine's scheduling lag.
const StallMin = time.Second

// Stall is one stall of the process: from the watch's wake that did not
// come (its last reading and WatchEvery: the process was stopped at the
// latest then) to the one that came.
type Stall struct {
	From, To time.Time
}

// Len is the stall's length, as the process measured it: at least as long
// as it was stopped, less at most WatchEvery.
func (s Stall) Len() time.Duration { return s.To.Sub(s.From) }

// stallsKept is how many stalls the watch keeps, the latest.
const stallsKept = 8

// watch is the process's watch.
var watch struct {
	mu   sync.Mutex
	n    int           // Watch calls not yet undone
	stop chan struct{} // closes to end the goroutine
	done chan struct{} // closed when it has ended
	last atomic.Int64  // its latest reading (Time); 0 while none runs

	stallMu sync.Mutex // the stalls measured: not mu, which the goroutine's end is waited under
	stalls  [stallsKept]struct{ from, to Time }
	next    int // where the next stall goes in stalls
}

// Watch starts the watch unless it runs, and returns the function that
// undoes this call: the watch ends, and is waited for, when every call
// is undone.
func Watch() (unwatch func()) {
	watch.mu.Lock()
	defer watch.mu.Unlock()
	if watch.n++; watch.n == 1 {
		watch.stop, watch.done = make(chan struct{}), make(chan struct{})
		watch.last.Store(int64(Now()))
		go watching(watch.stop, watch.done)
	}
	var once sync.Once
	return func() { once.Do(unwatchOne) }
}

func unwatchOne() {
	watch.mu.Lock()
	defer watch.mu.Unlock()
	if watch.n--; watch.n > 0 {
		return
	}
	close(watch.stop)
	<-watch.done
	watch.last.Store(0)
}

// watching is the watch's goroutine.
func watching(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTimer(WatchEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if hook := testHookWatch.Load(); hook != nil {
			(*hook)()
		}
		check(Now())
		t.Reset(WatchEvery)
	}
}

// testHookWatch, set by tests only, runs at each wake of the watch: a
// hook that blocks is a stall the watch measures.
var testHookWatch atomic.Pointer[func()]

// check takes the reading now: a stall when the last is more than
// WatchEvery and StallMin older; it becomes the last.
func check(now Time) {
	for {
		last := watch.last.Load()
		if last == 0 || int64(now) <= last {
			return // no watch, or a later reading taken already
		}
		if !watch.last.CompareAndSwap(last, int64(now)) {
			continue
		}
		if from := Time(last) + Time(WatchEvery); now-from >= Time(StallMin) {
			note(from, now)
		}
		return
	}
}

// note keeps the stall from from to to.
func note(from, to Time) {
	watch.stallMu.Lock()
	defer watch.stallMu.Unlock()
	watch.stalls[watch.next] = struct{ from, to Time }{from, to}
	watch.next = (watch.next + 1) % stallsKept
}

// StallIn returns the latest stall of the process that overlaps a to b
// (it began at or before b and ended at or after a), if any.
func StallIn(a, b time.Time) (Stall, bool) {
	check(Now())
	watch.stallMu.Lock()
	defer watch.stallMu.Unlock()
	for i := range stallsKept {
		s := watch.stalls[(watch.next-1-i+2*stallsKept)%stallsKept]
		if s.to == 0 {
			break
		}
		if s.from <= Of(b) && s.to >= Of(a) {
			return Stall{From: s.from.Std(), To: s.to.Std()}, true
		}
	}
	return Stall{}, false
}

// NoteStall records a stall from from to to, as the watch would have
// measured it, and returns the function that forgets every stall: a test
// seam, for the lines a stall colours without stopping the test's process.
func NoteStall(from, to time.Time) (forget func()) {
	note(Of(from), Of(to))
	return forgetStalls
}

// forgetStalls forgets every stall measured.
func forgetStalls() {
	watch.stallMu.Lock()
	defer watch.stallMu.Unlock()
	watch.stalls, watch.next = [stallsKept]struct{ from, to Time }{}, 0
}

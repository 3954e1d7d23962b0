package tier

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// admission is tier 1's queue: a weighted FIFO semaphore of size units,
// the one mechanism behind the gate (size 1, every request 1), the
// read/write gate (readers take 1 unit, a writer takes all of them) and the
// semaphore (n units, k per request). golang.org/x/sync/semaphore is its
// model: requests are served strictly in arrival order, so a large request
// at the head is not overtaken by small ones (which is what keeps a writer
// from starving behind a stream of readers); waits are channels, so each
// can be abandoned through a context, and a try never blocks.
//
// Unlike x/sync, the word that counts units taken also counts waiters, so
// that the uncontended acquire is a load and a CAS and the uncontended
// release one add, as for sync.Mutex (the target is the gate within 3x of
// it), and neither touches mu:
//
//   - state's low 32 bits are the units taken (held, or granted to a
//     waiter that has not woken yet); its high bits count the goroutines
//     queued, plus, for a moment, one that holds mu and is about to queue.
//   - Units are taken without mu only by a CAS that sees no waiter
//     (tryAcquire, acquire's fast path). So while anyone is queued, units
//     are taken only under mu, by grantLocked, in queue order: no arrival
//     can slip past a waiter, and units given back while someone waits stay
//     free until mu's holder grants them.
//   - Units are given back by one atomic add, with or without mu. An add
//     that finds waiters takes mu and grants them; the waiter count changes
//     only under mu, so a goroutine that counted itself in (under mu, before
//     it looked at the units) cannot miss a release: either the release's
//     add came first and the goroutine sees the units free, or the release
//     sees it counted and grants it once mu is free.
//
// The model in model/admission.pml checks this code step by step.
type admission struct {
	state atomic.Int64
	size  int64

	mu         sync.Mutex
	head, tail *admitWaiter // the queue, oldest first; under mu

	// testGaveUp, set by a test before use, runs in acquireSlow after a
	// queued waiter's select chose its context or closed and before it
	// takes mu: a grant made there races the give-up deterministically.
	testGaveUp func()
}

// admitWaiter is one queued acquire. It is in the queue exactly as long as
// ready is open: grantLocked unlinks it and closes ready in one critical
// section of mu, and a waiter that gives up unlinks itself under mu only
// after seeing ready still open.
type admitWaiter struct {
	n          int64
	ready      chan struct{}
	prev, next *admitWaiter
}

const (
	admitWaitOne  = int64(1) << 32   // one waiter in state
	admitUnitMask = admitWaitOne - 1 // the units taken, in state
	admitMaxSize  = math.MaxInt32    // keeps a release's underflow visible in the low bits
	admitSpins    = 4                // fast-path retries before queueing
)

// taken and waitersIn decode state.
func taken(s int64) int64     { return s & admitUnitMask }
func waitersIn(s int64) int64 { return s >> 32 }

// newAdmission returns an empty queue of size units (1..math.MaxInt32).
func newAdmission(size int64) *admission {
	if size < 1 || size > admitMaxSize {
		panic(fmt.Sprintf("tier: admission of %d units", size))
	}
	return &admission{size: size}
}

func (a *admission) checkUnits(n int64) {
	if n < 1 || n > a.size {
		badUnits(n, a.size)
	}
}

// badUnits panics, out of line so that the callers of checkUnits stay
// small.
//
//go:noinline
func badUnits(n, size int64) {
	panic(fmt.Sprintf("tier: %d units of an admission of %d", n, size))
}

// acquire takes n units (1 <= n <= size), waiting in FIFO order behind
// earlier waiters. It returns ctx.Err() when ctx ends first and ErrClosed
// when closed is closed first (closed may be nil); then it holds nothing.
// ctx and closed bound the wait only: units that are free and unwanted by
// any waiter are taken even if ctx has already ended (the callers check
// their context and closed flag themselves, as a sync.Mutex caller would).
//
// Happens-before: a successful acquire is ordered after the release (or
// hand-off) whose units it got, as for sync.Mutex: on the fast path its CAS
// reads the value the release's atomic add wrote; on the slow path the
// release's add precedes the grant that mu orders before our wake-up
// (close(ready) under mu, then our receive from ready).
//
// The fast path, one load and one CAS, runs while nobody is queued; the
// first attempt is here, with nothing else in the way.
func (a *admission) acquire(ctx context.Context, n int64, closed <-chan struct{}) error {
	s := a.state.Load()
	if waitersIn(s) == 0 && n >= 1 && a.size-taken(s) >= n && a.state.CompareAndSwap(s, s+n) {
		return nil
	}
	return a.acquireSpin(ctx, n, closed, s)
}

// acquireSpin follows a first attempt that failed after loading s. A short
// hold ends sooner than a park and a wake-up take, so while nobody is
// queued (as of the last load) it yields and retries the fast path, up to
// admitSpins more times, before acquireSlow queues it.
func (a *admission) acquireSpin(ctx context.Context, n int64, closed <-chan struct{}, s int64) error {
	a.checkUnits(n)
	for i := 0; i < admitSpins && waitersIn(s) == 0; i++ {
		runtime.Gosched()
		s = a.state.Load()
		if waitersIn(s) == 0 && a.size-taken(s) >= n && a.state.CompareAndSwap(s, s+n) {
			return nil
		}
	}
	return a.acquireSlow(ctx, n, closed)
}

// acquireSlow counts itself in as a waiter under mu and then either takes
// the units at once (nobody queued before it and they are free) or queues.
// A queued waiter that gives up takes mu and looks at ready again: grants
// close ready under mu, so mu orders the two. Either the grant came first,
// and the units were taken for us: we give them back (the undo x/sync's
// Acquire also does, without it they would stay taken by nobody, for
// ever); or we leave the queue first and no grant can pick us any more. A
// waiter leaving the head may unblock the ones behind it (a large request
// no longer holding back small ones that fit), so it grants them.
func (a *admission) acquireSlow(ctx context.Context, n int64, closed <-chan struct{}) error {
	a.mu.Lock()
	s := a.state.Add(admitWaitOne)
	if waitersIn(s) == 1 && a.size-taken(s) >= n {
		// Nobody queued before us. Units only come back meanwhile (takers
		// see us counted), so they still fit: take them, count us out.
		a.state.Add(n - admitWaitOne)
		a.mu.Unlock()
		return nil
	}
	w := &admitWaiter{n: n, ready: make(chan struct{})}
	a.pushLocked(w)
	a.mu.Unlock()

	var err error
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-closed:
		err = ErrClosed
	}
	if a.testGaveUp != nil {
		a.testGaveUp()
	}
	a.mu.Lock()
	select {
	case <-w.ready:
		// Granted as we gave up: undo the grant.
		a.state.Add(-n)
		a.grantLocked()
	default:
		wasHead := a.head == w
		a.unlinkLocked(w)
		a.state.Add(-admitWaitOne)
		if wasHead {
			a.grantLocked()
		}
	}
	a.mu.Unlock()
	return err
}

// tryAcquire takes n units only if they are free and nobody waits; it
// never blocks (it does not touch mu; its CAS is retried only when another
// goroutine changed the word meanwhile, so it fails only when the units
// were taken or someone was queued at the moment it looked). A success is
// ordered after the release whose units it got, as acquire's fast path.
func (a *admission) tryAcquire(n int64) bool {
	a.checkUnits(n)
	for {
		s := a.state.Load()
		if waitersIn(s) != 0 || a.size-taken(s) < n {
			return false
		}
		if a.state.CompareAndSwap(s, s+n) {
			return true
		}
	}
}

// release gives n units back and grants waiters at the head in order while
// they fit. The units come back with one atomic add, so everything the
// caller did before release happens before the next acquire that gets
// them (through that add, or through mu and the grant's close of ready).
// Releasing more units than are taken panics, as x/sync's Release does.
func (a *admission) release(n int64) {
	s := a.state.Add(-n)
	if waitersIn(s) != 0 || n < 1 || taken(s) > a.size {
		a.releaseSlow(n, s)
	}
}

// releaseSlow follows a release whose add left s: it panics if n was out
// of range (more units than were taken make the low bits underflow), else
// it grants the waiters.
func (a *admission) releaseSlow(n, s int64) {
	if n < 1 || taken(s) > a.size {
		panic(fmt.Sprintf("tier: %d units released to an admission of %d: more than were taken", n, a.size))
	}
	a.mu.Lock()
	a.grantLocked()
	a.mu.Unlock()
}

// handOff passes the caller's n held units straight to the head waiter, if
// one is queued and would then be granted, and reports whether it did;
// otherwise the caller keeps them. The units come back and the head is
// granted in one critical section of mu, with the head still counted in
// state, so no arrival can take them in between (its CAS sees a waiter,
// and its slow path needs mu). If the head is giving up at that moment, mu
// orders the two: either it left first (no hand-off, the caller keeps the
// units) or it is granted and gives the units back itself, as for any
// grant that races a give-up. What the caller did before handOff happens
// before the waiter's acquire returns: the grant's close of ready comes
// after it, under mu, and the waiter returns after receiving from ready.
func (a *admission) handOff(n int64) bool {
	a.checkUnits(n)
	if waitersIn(a.state.Load()) == 0 {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.head == nil || a.size-taken(a.state.Load())+n < a.head.n {
		return false
	}
	a.state.Add(-n)
	a.grantLocked()
	return true
}

// waiters reports how many goroutines are queued (counting, for a moment,
// one that holds mu and is deciding whether to queue). It reads one atomic
// word and orders nothing.
func (a *admission) waiters() int { return int(waitersIn(a.state.Load())) }

// inUse reports how many units are taken.
func (a *admission) inUse() int64 { return taken(a.state.Load()) }

// grantLocked takes units for the waiters at the head, in order, while the
// head's request fits, and wakes each by closing its ready channel. mu is
// held. While the queue is not empty, units are taken only here (every
// taker without mu sees the waiters counted), so units free when we look
// are still free when we take them: they can only come back meanwhile. The
// close stays under mu so that a waiter giving up sees it (see
// acquireSlow).
func (a *admission) grantLocked() {
	for w := a.head; w != nil; w = a.head {
		if a.size-taken(a.state.Load()) < w.n {
			return // FIFO: the ones behind wait for the head
		}
		a.state.Add(w.n - admitWaitOne)
		a.unlinkLocked(w)
		close(w.ready)
	}
}

func (a *admission) pushLocked(w *admitWaiter) {
	w.prev = a.tail
	if a.tail == nil {
		a.head = w
	} else {
		a.tail.next = w
	}
	a.tail = w
}

func (a *admission) unlinkLocked(w *admitWaiter) {
	if w.prev == nil {
		a.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		a.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
}

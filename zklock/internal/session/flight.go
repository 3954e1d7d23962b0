package session

import (
	"context"
	"sync"
	"time"

	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// What the floor's locks send, and how:
//
//   - every acquisition's create and listing are admitted under a bound on
//     the session's requests in flight (Flight), so that a burst (a
//     thousand goroutines queueing at once) waits in the process rather
//     than in the server's queue, where it would hold up every later
//     request of the session past the lease;
//   - every write goes through the session's writer (package writes), which
//     sends what is waiting in one multi, and a write that succeeds
//     renews the lease (lease.go);
//   - reads (a listing, a watch) are sent here: Send.
//
// go-zookeeper's calls block until the reply and cannot be withdrawn, so
// an acquisition's read runs on a goroutine of the session's for its
// round trip while the caller waits for it or for its ctx. Between
// requests, while it waits for its watch, an acquisition has no goroutine
// but the caller's.

// Flight bounds the requests in flight, adapting the bound to the round
// trip it measures: cut by a quarter (at most once per round trip) when a
// request took longer than the target, raised by one when one came back
// fast while the bound was reached. The target is T/32, an eighth of how
// far the lease stays ahead of its last proof (T/4, lease.go), so that a
// request of the session, and the lease's sync behind it, returns well
// within the lease. Its reads are made here (Send, LaunchAdmitted), each
// on a goroutine of the floor's.
type Flight struct {
	// What it takes of the floor (init): its end, which a wait for a
	// place gives up at; its credentials' gate, which no request is
	// admitted ahead of (nil: none); its Go, for the reads it makes; its
	// tap, told of each read out (nil: none); the target round trip.
	quit   <-chan struct{}
	auth   *authGate
	spawn  func(func())
	tap    *wire.Tap
	target func() time.Duration

	mu    sync.Mutex
	n     int // admitted and not yet released
	limit int
	queue []waitingFlight // in order
	cutAt time.Time       // when limit was last cut
}

// init ties the bound to its floor: quit, the floor's end; auth, its
// credentials' gate; spawn, the floor's Go; tap, the floor's wire tap
// (nil: none); target, the round trip the bound aims at.
func (f *Flight) init(quit <-chan struct{}, auth *authGate, spawn func(func()), tap *wire.Tap, target func() time.Duration) {
	f.quit, f.auth, f.spawn, f.tap, f.target = quit, auth, spawn, tap, target
}

// waitingFlight is an acquire waiting for k places.
type waitingFlight struct {
	k     int
	ready chan struct{} // closed, under mu, when admitted
}

const (
	minInflight   = 16
	startInflight = 256
	maxInflight   = 2048 // well below the tap's ring: see wire.RingSize
)

// acquire admits k requests (1 or 2), waiting in order behind earlier
// ones, until ctx ends or quit closes.
func (f *Flight) acquire(ctx context.Context, k int, quit <-chan struct{}) error {
	f.mu.Lock()
	if f.limit == 0 {
		f.limit = startInflight
	}
	if f.n+k <= f.limit && len(f.queue) == 0 {
		f.n += k
		f.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	f.queue = append(f.queue, waitingFlight{k, ready})
	f.mu.Unlock()
	var err error
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-quit:
		err = ErrClosed
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-ready:
		// Admitted as we gave up (the close happened under mu, before we
		// took it): hand the places on.
		f.n -= k
		f.wakeLocked()
	default:
		for i, w := range f.queue {
			if w.ready == ready {
				f.queue = append(f.queue[:i], f.queue[i+1:]...)
				break
			}
		}
		f.wakeLocked() // a pair leaving the head may let a single go
	}
	return err
}

// GiveBack returns a place Admit gave and no request used.
func (f *Flight) GiveBack() {
	f.mu.Lock()
	f.n--
	f.wakeLocked()
	f.mu.Unlock()
}

// release ends one request that took rtt, against the target round trip.
func (f *Flight) release(rtt, target time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	saturated := f.n >= f.limit
	f.n--
	switch {
	case rtt > target && time.Since(f.cutAt) > rtt:
		f.limit = max(minInflight, f.limit*3/4)
		f.cutAt = time.Now()
	case rtt <= target/2 && saturated:
		f.limit = min(maxInflight, f.limit+1)
	}
	f.wakeLocked()
}

func (f *Flight) wakeLocked() {
	for len(f.queue) > 0 && f.n+f.queue[0].k <= f.limit {
		w := f.queue[0]
		f.queue[0] = waitingFlight{}
		f.queue = f.queue[1:]
		f.n += w.k
		close(w.ready)
	}
}

// Admit admits k requests (1 or 2: an acquisition's create and the
// listing pipelined behind it) under the bound, once the session's
// credentials are in place (its first requests wait for them here, and
// a failure to send them is every request's error), waiting in order
// behind earlier ones, until ctx ends or the floor closes. The create's
// place is given back by the writer when it is answered
// (writeLink.ended), the listing's by LaunchAdmitted's request, or by
// GiveBack when unused.
func (f *Flight) Admit(ctx context.Context, k int) error {
	if err := f.auth.wait(ctx, f.quit); err != nil {
		return err
	}
	return f.acquire(ctx, k, f.quit)
}

// Send makes a read of the locks' (do makes it on the connection; it
// must write its results only into variables its caller reads after Send
// returned nil: on ctx's end the request may still be running): it admits
// it under the bound (the caller waits for its place itself, so a request
// waiting for one has no goroutine of its own), makes it on a goroutine of
// the floor's, and waits for it or for ctx.
func (f *Flight) Send(ctx context.Context, do func() error) error {
	if err := f.Admit(ctx, 1); err != nil {
		return err
	}
	return f.LaunchAdmitted(do).Wait(ctx)
}

// Call is a request running on a goroutine of the floor's.
type Call struct {
	fin chan struct{} // closed once err is written
	err error
}

// LaunchAdmitted makes do, a request whose place Admit gave, on a
// goroutine of the floor's, and gives the place back when it ends.
func (f *Flight) LaunchAdmitted(do func() error) *Call {
	c := &Call{fin: make(chan struct{})}
	f.spawn(func() {
		c.err = f.make(do)
		close(c.fin)
	})
	return c
}

// Wait waits for c, or for ctx.
func (c *Call) Wait(ctx context.Context) error {
	select {
	case <-c.fin:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// make makes do, an admitted request: it counts it out on the wire tap,
// and gives its place in the bound back after.
func (f *Flight) make(do func() error) error {
	start, tap := time.Now(), f.tap
	if tap != nil {
		tap.Handed()
	}
	err := do()
	if tap != nil {
		tap.Answered()
	}
	f.release(time.Since(start), f.target())
	return err
}

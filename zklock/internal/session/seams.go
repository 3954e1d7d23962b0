package session

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// Test seams: what package zklock's tests reach below the session's face
// (zklock's export_test.go), as functions or as methods of the parts they
// reach. The library itself calls none of them.

// TapOf is s's wire tap (nil under Wrap).
func TapOf(s *Floor) *wire.Tap { return s.tap }

// Valid reports whether the lease would let a hold be granted now.
func (le *Lease) Valid() bool {
	le.s.st.mu.Lock()
	defer le.s.st.mu.Unlock()
	return le.grantableLocked(time.Now())
}

// Refresh sends a sync that proves the session (refresh), and returns
// the channel closed once it is answered.
func (le *Lease) Refresh() <-chan struct{} { return le.refresh() }

// LastK is the write time the lease dates its latest proof by: the k of
// the chains of the proofs queued after it (zero: none).
func (le *Lease) LastK() time.Time {
	if k := le.lastK.Load(); k != 0 {
		return mono.Time(k).Std()
	}
	return time.Time{}
}

// Fill takes every free place in the bound on requests in flight, as a
// burst of acquisitions would, and returns the function that gives them
// back.
func (f *Flight) Fill() (giveBack func()) {
	f.mu.Lock()
	if f.limit == 0 {
		f.limit = startInflight
	}
	k := max(0, f.limit-f.n)
	f.n += k
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.n -= k
		f.wakeLocked()
		f.mu.Unlock()
	}
}

// SetPollEvery sets how often floors made by Wrap poll their connection's
// state, busy or idle, and returns the function that restores it.
func SetPollEvery(d time.Duration) (restore func()) {
	old, oldIdle := pollEvery, pollIdle
	pollEvery, pollIdle = d, d
	return func() { pollEvery, pollIdle = old, oldIdle }
}

// SetFoldWait sets how long the deletes of floors made from now on linger
// for a create to carry them, and returns the function that restores it.
func SetFoldWait(d time.Duration) (restore func()) {
	old := foldWait
	foldWait = d
	return func() { foldWait = old }
}

// SetAuthDelay delays the sending of every floor's credentials by d, and
// returns the function that restores it.
func SetAuthDelay(d time.Duration) (restore func()) {
	old := testAuthDelay
	testAuthDelay = d
	return func() { testAuthDelay = old }
}

// HoldWriters holds every floor's writer before it sends its next batch
// until the returned function is called, so that a test can see what one
// batch gathers.
func HoldWriters() (let func()) {
	gate := make(chan struct{})
	hold := func(s *Floor) {
		select {
		case <-gate:
		case <-s.life.ctx.Done():
		}
	}
	old := testWriterGate.Swap(&hold)
	var once sync.Once
	return func() {
		once.Do(func() {
			testWriterGate.Store(old)
			close(gate)
		})
	}
}

// GrantedTimeout and ConnQuit are conninfo.go's reads of go-zookeeper's
// unexported fields, for the test that pins them.
var (
	GrantedTimeout = grantedTimeout
	ConnQuit       = connQuit
)

// testApplyHook, when a test sets it, runs in apply (state.go) as a state
// is applied: before its lock is taken (taken false), and after the state
// ended holds, before their losses are told (taken true).
var testApplyHook atomic.Pointer[func(taken bool)]

// SetApplyHook sets the hook run as every floor applies a connection state
// (testApplyHook), and returns the function that removes it.
func SetApplyHook(fn func(taken bool)) (remove func()) {
	testApplyHook.Store(&fn)
	return func() { testApplyHook.Store(nil) }
}

// testWokeHook, when a test sets it, runs in Lease.proved once a proof's
// new k woke the renewer, before the proof's goroutine goes on: a test
// that yields there lets the renewer look first.
var testWokeHook atomic.Pointer[func()]

// SetWokeHook sets testWokeHook for every floor, and returns the function
// that removes it.
func SetWokeHook(fn func()) (remove func()) {
	testWokeHook.Store(&fn)
	return func() { testWokeHook.Store(nil) }
}

// testHandedHook, when a test sets it, runs in the writer between a
// request's Handing and the call that sends it (writeLink.send): a test
// that waits there lets the creates' listings overtake their create.
var testHandedHook atomic.Pointer[func()]

// SetHandedHook sets testHandedHook for every floor, and returns the
// function that removes it.
func SetHandedHook(fn func()) (remove func()) {
	testHandedHook.Store(&fn)
	return func() { testHandedHook.Store(nil) }
}

// SetPauseHook makes fn run, with the error that asked for it, before each
// pause of every Retry between its attempts, and returns the function that
// removes it.
func SetPauseHook(fn func(err error)) (restore func()) {
	pauseHook.Store(&fn)
	return func() { pauseHook.Store(nil) }
}

// testSenderHook, when a test sets it, runs as a floor's lister starts
// sending (lister.run): a test that waits there lets listings queue.
var testSenderHook atomic.Pointer[func()]

// SetSenderHook sets testSenderHook for every floor, and returns the
// function that removes it.
func SetSenderHook(fn func()) (remove func()) {
	testSenderHook.Store(&fn)
	return func() { testSenderHook.Store(nil) }
}

// ListingsWaiting reports how many of s's listings wait for its lister.
func ListingsWaiting(s *Floor) int {
	s.lister.mu.Lock()
	defer s.lister.mu.Unlock()
	return len(s.lister.waiting)
}

// testOwnAlone, when a test sets it, sends a batch of one read with a
// watch as the session's own (setWatches and multiRead) rather than
// go-zookeeper's GetW (lister.send): the tests of an own watch's life with
// one waiter.
var testOwnAlone atomic.Bool

// SetOwnAlone sets testOwnAlone for every floor, and returns the function
// that clears it.
func SetOwnAlone() (restore func()) {
	testOwnAlone.Store(true)
	return func() { testOwnAlone.Store(false) }
}

package mutexbool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrNil is returned by Get when called on a nil *BooleanMutex.
var ErrNil = errors.New("mutexbool: nil *BooleanMutex")

// BooleanMutex is a boolean that goroutines can wait on until it is true.
//
// Set(true) releases every waiter at once; Set(false) makes later waiters
// block again. The zero value is a usable BooleanMutex whose state is false.
// A BooleanMutex must not be copied after first use.
//
// Methods on a nil *BooleanMutex do not panic: Get returns ErrNil, Set does
// nothing and State reports false.
type BooleanMutex struct {
	// on mirrors the state so that Get can return without locking when it
	// is true. It is only written while mu is held.
	on atomic.Bool

	mu sync.Mutex
	// ch is closed by Set(true) to wake the goroutines waiting on it. It is
	// created lazily by the first waiter that finds the state false, so
	// toggling the state with nobody waiting allocates nothing; and Set(true)
	// drops it, so the next false period starts with a fresh channel.
	ch chan struct{}
}

// New returns a BooleanMutex whose state is initial.
func New(initial bool) *BooleanMutex {
	m := new(BooleanMutex)
	m.on.Store(initial)
	return m
}

// Set changes the state to v. Setting true wakes every goroutine blocked in
// Get; setting false makes Gets that start afterwards block. Setting the
// state it already has does nothing.
func (m *BooleanMutex) Set(v bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.on.Store(v)
	if v && m.ch != nil {
		close(m.ch)
		m.ch = nil
	}
}

// Get blocks until the state is true or ctx is done. It returns nil at once
// if the state is already true, and ctx.Err() if ctx ends first. A Get that
// gives up leaves nothing behind and does not affect other waiters.
func (m *BooleanMutex) Get(ctx context.Context) error {
	if m == nil {
		return ErrNil
	}
	if m.on.Load() {
		return nil
	}

	m.mu.Lock()
	if m.on.Load() {
		m.mu.Unlock()
		return nil
	}
	if m.ch == nil {
		m.ch = make(chan struct{})
	}
	ch := m.ch
	m.mu.Unlock()

	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		// If the state became true at the same moment, report success:
		// the caller would otherwise miss a wake-up that did happen.
		select {
		case <-ch:
			return nil
		default:
			return ctx.Err()
		}
	}
}

// Done returns a channel that is closed when the state is true: closed
// already if it is true now, else closed by the next Set(true). It lets a
// waiter select on the BooleanMutex together with timers and other
// channels, as Get selects on its context. A channel obtained while the
// state is false stays open through a Set(false); it belongs to the false
// period in which it was obtained. On a nil *BooleanMutex it returns nil, a
// channel that is never ready.
func (m *BooleanMutex) Done() <-chan struct{} {
	if m == nil {
		return nil
	}
	if m.on.Load() {
		return closed
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.on.Load() {
		return closed
	}
	if m.ch == nil {
		m.ch = make(chan struct{})
	}
	return m.ch
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// State reports the current state.
func (m *BooleanMutex) State() bool {
	return m != nil && m.on.Load()
}

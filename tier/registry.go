package tier

import (
	"sync"

	"github.com/tierlock/tierlock/zklock"
)

// Registry hands out one lock per key below a root path, shared by every
// caller in the process, for schedulers with many keys (one lock per job
// or per resource). A lock no goroutine is acquiring or holding is dropped
// from the registry, so memory stays bounded by the keys in use however
// many distinct keys pass through over time.
//
// Obtain the lock each time it is needed rather than keeping it: a dropped
// lock still works (its calls are forwarded to the registry's current lock
// for the key), but obtaining is cheap.
type Registry struct {
	s    *zklock.Session
	root string
	cfg  config

	mu     sync.Mutex
	locks  map[string]*Lock
	closed bool
	// sweepAt is the map size at which Obtain drops every lock nobody is
	// acquiring or holding (obtained and never acquired, say), so that
	// memory stays bounded for any sequence of calls.
	sweepAt int
}

// NewRegistry returns a registry of locks at root/<key> on session s. The
// options apply to every lock.
func NewRegistry(s *zklock.Session, root string, opts ...Option) (*Registry, error) {
	if s == nil {
		return nil, zklock.ErrNilSession
	}
	if err := zklock.ValidatePath(root); err != nil {
		return nil, err
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Registry{s: s, root: root, cfg: cfg, locks: make(map[string]*Lock), sweepAt: 64}, nil
}

// Obtain returns the lock for key, which must be a single path segment.
func (r *Registry) Obtain(key string) (*Lock, error) {
	if r == nil {
		return nil, ErrNilLock
	}
	if err := zklock.ValidateKey(key); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if l := r.locks[key]; l != nil {
		return l, nil
	}
	if len(r.locks) >= r.sweepAt {
		r.sweepLocked()
	}
	l, err := newLock(r.s, r.root+"/"+key, r.cfg)
	if err != nil {
		return nil, err
	}
	l.reg, l.key = r, key
	r.locks[key] = l
	return l, nil
}

// sweepLocked retires every idle lock and sets the next sweep at twice the
// locks left, so that sweeping costs O(1) per Obtain. r.mu is held. A
// retired lock that a caller still has forwards its calls to the
// registry's current lock for the key.
func (r *Registry) sweepLocked() {
	for key, l := range r.locks {
		if l.users.CompareAndSwap(0, retiredMark) {
			delete(r.locks, key)
			_ = l.Close() // idle: nothing to wait for
		}
	}
	r.sweepAt = 2*len(r.locks) + 64
}

// find returns the current lock for key without creating one, or nil.
func (r *Registry) find(key string) *Lock {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.locks[key]
}

// lookup returns the current lock for key, creating it if needed; nil when
// the registry is closed.
func (r *Registry) lookup(key string) *Lock {
	l, err := r.Obtain(key)
	if err != nil {
		return nil
	}
	return l
}

// retire drops l if it is still idle: its users count is swapped to a
// mark that makes later calls on it go to a fresh lock.
func (r *Registry) retire(l *Lock) {
	r.mu.Lock()
	if !l.users.CompareAndSwap(0, retiredMark) {
		r.mu.Unlock()
		return
	}
	if r.locks[l.key] == l {
		delete(r.locks, l.key)
	}
	r.mu.Unlock()
	_ = l.Close()
}

// Len reports how many locks the registry keeps.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.locks)
}

// Close closes every lock of the registry; later calls return ErrClosed.
func (r *Registry) Close() error {
	if r == nil {
		return ErrNilLock
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	locks := r.locks
	r.locks = nil
	r.mu.Unlock()
	for _, l := range locks {
		_ = l.Close()
	}
	return nil
}

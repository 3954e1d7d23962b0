package tier

import (
	"context"
	"fmt"

	"github.com/tierlock/tierlock/internal/closed"
	"github.com/tierlock/tierlock/zklock"
)

// The registries hand out locks by key below a root path (one lock per job
// or per resource), shared by every caller in the process, for schedulers
// with many keys. A registry owns its locks: a key's lock exists while some
// call is acquiring or holding it (a reference count per key), and is
// closed and forgotten when its last hold is released, so memory stays
// bounded by the keys in use, whatever sequence of calls passes through.
// Callers never see the locks: they acquire by key and release, read the
// token or count holds by the held context. The three registries share
// one implementation and have the same methods and errors for what they
// have in common: Release, Token, HoldCount, Len and Close.

// Registry hands out Locks by key: the lock of key is at root/<key> (see
// New for the path rules, and [zklock.ValidateKey] for the keys': one
// path segment, no "/").
type Registry struct{ r registry[*Lock] }

// NewRegistry returns a registry of locks at root/<key> on session s. The
// options apply to every lock.
func NewRegistry(s *zklock.Session, root string, opts ...Option) (*Registry, error) {
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	r := &Registry{}
	if err := r.r.init(s, root, "Acquire", func(path string) (*Lock, error) { return newLock(s, path, cfg) }); err != nil {
		return nil, err
	}
	return r, nil
}

// Acquire is Lock.Acquire on key's lock. The returned context carries the
// hold (and re-enters like a Lock's); release it with Release.
func (r *Registry) Acquire(ctx context.Context, key string) (context.Context, error) {
	if r == nil {
		return nil, errNil("Registry")
	}
	held, _, err := r.r.acquire(ctx, key, func(l *Lock) (context.Context, bool, error) {
		held, err := l.Acquire(ctx)
		return held, err == nil, err
	})
	return held, err
}

// TryAcquire is Lock.TryAcquire on key's lock.
func (r *Registry) TryAcquire(ctx context.Context, key string) (context.Context, bool, error) {
	if r == nil {
		return nil, false, errNil("Registry")
	}
	return r.r.acquire(ctx, key, func(l *Lock) (context.Context, bool, error) { return l.TryAcquire(ctx) })
}

// Release is Lock.Release for a hold of this registry. The last release of
// a key's last hold closes its lock. A context that carries no hold of this
// registry (the one passed to Acquire, say) releases nothing: Release
// returns ErrNotHolder and logs a warning naming the root.
func (r *Registry) Release(held context.Context) error {
	if r == nil {
		return errNil("Registry")
	}
	return r.r.release(held)
}

// Token is Lock.Token for a hold of this registry.
func (r *Registry) Token(held context.Context) (int64, error) {
	if r == nil {
		return 0, errNil("Registry")
	}
	return r.r.token(held)
}

// HoldCount is Lock.HoldCount for a hold of this registry: 0 when held
// carries none of its holds.
func (r *Registry) HoldCount(held context.Context) int {
	if r == nil {
		return 0
	}
	return r.r.holdCount(held)
}

// Revoked is Lock.Revoked for a hold of this registry (see WithRevocable):
// closed when a revocation request for the hold arrives, and when held
// carries none of its holds.
func (r *Registry) Revoked(held context.Context) <-chan struct{} {
	if r == nil {
		return closed.Chan
	}
	e, err := r.r.entryOf(held)
	if err != nil {
		return closed.Chan
	}
	return e.v.Revoked(held)
}

// Len reports how many keys have a lock: keys being acquired or held.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	return r.r.k.len()
}

// Close closes every lock of the registry: holds are cancelled (cause
// ErrClosed), waits end with ErrClosed, and later calls return ErrClosed.
// Close is idempotent.
func (r *Registry) Close() error {
	if r == nil {
		return errNil("Registry")
	}
	r.r.k.close()
	return nil
}

// RWRegistry hands out RWLocks by key, as Registry does Locks.
type RWRegistry struct{ r registry[*RWLock] }

// NewRWRegistry returns a registry of read/write locks at root/<key> on
// session s; opts configure every lock (see NewRWLock).
func NewRWRegistry(s *zklock.Session, root string, opts ...Option) (*RWRegistry, error) {
	r := &RWRegistry{}
	if err := r.r.init(s, root, "RLock or Lock", func(path string) (*RWLock, error) { return NewRWLock(s, path, opts...) }); err != nil {
		return nil, err
	}
	return r, nil
}

// RLock is RWLock.RLock on key's lock; release with Release.
func (r *RWRegistry) RLock(ctx context.Context, key string) (context.Context, error) {
	held, _, err := r.take(ctx, key, false, true)
	return held, err
}

// TryRLock is RWLock.TryRLock on key's lock.
func (r *RWRegistry) TryRLock(ctx context.Context, key string) (context.Context, bool, error) {
	return r.take(ctx, key, false, false)
}

// Lock is RWLock.Lock on key's lock; release with Release.
func (r *RWRegistry) Lock(ctx context.Context, key string) (context.Context, error) {
	held, _, err := r.take(ctx, key, true, true)
	return held, err
}

// TryLock is RWLock.TryLock on key's lock.
func (r *RWRegistry) TryLock(ctx context.Context, key string) (context.Context, bool, error) {
	return r.take(ctx, key, true, false)
}

func (r *RWRegistry) take(ctx context.Context, key string, write, wait bool) (context.Context, bool, error) {
	if r == nil {
		return nil, false, errNil("RWRegistry")
	}
	return r.r.acquire(ctx, key, func(rw *RWLock) (context.Context, bool, error) {
		if write {
			return rw.lock(ctx, wait)
		}
		return rw.rlock(ctx, wait)
	})
}

// Release is RWLock.Release for a hold of this registry.
func (r *RWRegistry) Release(held context.Context) error {
	if r == nil {
		return errNil("RWRegistry")
	}
	return r.r.release(held)
}

// Token is RWLock.Token for a hold of this registry.
func (r *RWRegistry) Token(held context.Context) (int64, error) {
	if r == nil {
		return 0, errNil("RWRegistry")
	}
	return r.r.token(held)
}

// HoldCount is RWLock.HoldCount for a hold of this registry.
func (r *RWRegistry) HoldCount(held context.Context) int {
	if r == nil {
		return 0
	}
	return r.r.holdCount(held)
}

// Len reports how many keys have a lock.
func (r *RWRegistry) Len() int {
	if r == nil {
		return 0
	}
	return r.r.k.len()
}

// Close closes every lock of the registry, as Registry.Close.
func (r *RWRegistry) Close() error {
	if r == nil {
		return errNil("RWRegistry")
	}
	r.r.k.close()
	return nil
}

// SemaphoreRegistry hands out semaphores of n leases by key, as Registry
// does Locks.
type SemaphoreRegistry struct{ r registry[*Semaphore] }

// NewSemaphoreRegistry returns a registry of semaphores of n leases at
// root/<key> on session s; opts configure every semaphore (see
// NewSemaphore).
func NewSemaphoreRegistry(s *zklock.Session, root string, n int, opts ...Option) (*SemaphoreRegistry, error) {
	if n < 1 {
		return nil, fromZK(fmt.Errorf("%w: %d leases", ErrInvalidOption, n)) // as NewSemaphore's
	}
	r := &SemaphoreRegistry{}
	if err := r.r.init(s, root, "Acquire", func(path string) (*Semaphore, error) { return NewSemaphore(s, path, n, opts...) }); err != nil {
		return nil, err
	}
	return r, nil
}

// Acquire is Semaphore.Acquire on key's semaphore; release with Release.
func (r *SemaphoreRegistry) Acquire(ctx context.Context, key string, k int) (context.Context, error) {
	held, _, err := r.take(ctx, key, k, true)
	return held, err
}

// TryAcquire is Semaphore.TryAcquire on key's semaphore.
func (r *SemaphoreRegistry) TryAcquire(ctx context.Context, key string, k int) (context.Context, bool, error) {
	return r.take(ctx, key, k, false)
}

func (r *SemaphoreRegistry) take(ctx context.Context, key string, k int, wait bool) (context.Context, bool, error) {
	if r == nil {
		return nil, false, errNil("SemaphoreRegistry")
	}
	return r.r.acquire(ctx, key, func(sem *Semaphore) (context.Context, bool, error) { return sem.acquire(ctx, k, wait) })
}

// Release is Semaphore.Release for a hold of this registry.
func (r *SemaphoreRegistry) Release(held context.Context) error {
	if r == nil {
		return errNil("SemaphoreRegistry")
	}
	return r.r.release(held)
}

// Token is Semaphore.Token for a hold of this registry.
func (r *SemaphoreRegistry) Token(held context.Context) (int64, error) {
	if r == nil {
		return 0, errNil("SemaphoreRegistry")
	}
	return r.r.token(held)
}

// HoldCount is Semaphore.HoldCount for a hold of this registry.
func (r *SemaphoreRegistry) HoldCount(held context.Context) int {
	if r == nil {
		return 0
	}
	return r.r.holdCount(held)
}

// Len reports how many keys have a semaphore.
func (r *SemaphoreRegistry) Len() int {
	if r == nil {
		return 0
	}
	return r.r.k.len()
}

// Close closes every semaphore of the registry, as Registry.Close.
func (r *SemaphoreRegistry) Close() error {
	if r == nil {
		return errNil("SemaphoreRegistry")
	}
	r.r.k.close()
	return nil
}

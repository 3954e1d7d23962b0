package tier

import (
	"context"
	"errors"
	"fmt"

	"github.com/tierlock/tierlock/zklock"
)

// RWRegistry hands out read/write locks by key below a root path, with
// Registry's bounded memory: a key's RWLock lives while some call acquires
// or holds it.
type RWRegistry struct{ k keyed[*RWLock] }

type rwEntryKey struct{ r *RWRegistry }

// NewRWRegistry returns a registry of read/write locks at root/<key> on s.
func NewRWRegistry(s *zklock.Session, root string, opts ...Option) (*RWRegistry, error) {
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
	if cfg.maxHandoffs > 0 {
		return nil, fmt.Errorf("%w: hand-off is for Lock only", ErrInvalidOption)
	}
	if cfg.revocable {
		return nil, fmt.Errorf("%w: revocation is for Lock only", ErrInvalidOption)
	}
	r := &RWRegistry{}
	r.k.m = map[string]*keyedEntry[*RWLock]{}
	r.k.mk = func(key string) (*RWLock, error) { return newRWLock(s, root+"/"+key, cfg) }
	return r, nil
}

// RLock is RWLock.RLock on key's lock; release with RUnlock.
func (r *RWRegistry) RLock(ctx context.Context, key string) (context.Context, error) {
	held, _, err := r.acquire(ctx, key, false, true)
	return held, err
}

// TryRLock is RWLock.TryRLock on key's lock.
func (r *RWRegistry) TryRLock(ctx context.Context, key string) (context.Context, bool, error) {
	return r.acquire(ctx, key, false, false)
}

// Lock is RWLock.Lock on key's lock; release with Unlock.
func (r *RWRegistry) Lock(ctx context.Context, key string) (context.Context, error) {
	held, _, err := r.acquire(ctx, key, true, true)
	return held, err
}

// TryLock is RWLock.TryLock on key's lock.
func (r *RWRegistry) TryLock(ctx context.Context, key string) (context.Context, bool, error) {
	return r.acquire(ctx, key, true, false)
}

func (r *RWRegistry) acquire(ctx context.Context, key string, write, wait bool) (context.Context, bool, error) {
	if r == nil {
		return nil, false, errNil("RWRegistry")
	}
	if ctx == nil {
		return nil, false, ErrNilContext
	}
	e, err := r.k.ref(key)
	if err != nil {
		return nil, false, err
	}
	var held context.Context
	ok := true
	switch {
	case write && wait:
		held, err = e.v.Lock(ctx)
	case write:
		held, ok, err = e.v.TryLock(ctx)
	case wait:
		held, err = e.v.RLock(ctx)
	default:
		held, ok, err = e.v.TryRLock(ctx)
	}
	if err != nil || !ok {
		r.k.unref(e)
		return nil, ok, err
	}
	if cur, _ := held.Value(rwEntryKey{r}).(*keyedEntry[*RWLock]); cur == e {
		return held, true, nil
	}
	return context.WithValue(held, rwEntryKey{r}, e), true, nil
}

// RUnlock is RWLock.RUnlock for a hold of this registry.
func (r *RWRegistry) RUnlock(held context.Context) error { return r.release(held, false) }

// Unlock is RWLock.Unlock for a hold of this registry.
func (r *RWRegistry) Unlock(held context.Context) error { return r.release(held, true) }

func (r *RWRegistry) release(held context.Context, write bool) error {
	if r == nil {
		return errNil("RWRegistry")
	}
	if held == nil {
		return ErrNilContext
	}
	e, _ := held.Value(rwEntryKey{r}).(*keyedEntry[*RWLock])
	if e == nil {
		return ErrNotHolder
	}
	if err := r.k.live(e); err != nil {
		return err
	}
	var err error
	if write {
		err = e.v.Unlock(held)
	} else {
		err = e.v.RUnlock(held)
	}
	if err == nil || isLost(err) {
		r.k.unref(e)
	}
	return err
}

// Token is RWLock.Token for a hold of this registry.
func (r *RWRegistry) Token(held context.Context) (int64, error) {
	if r == nil {
		return 0, errNil("RWRegistry")
	}
	if held == nil {
		return 0, ErrNilContext
	}
	e, _ := held.Value(rwEntryKey{r}).(*keyedEntry[*RWLock])
	if e == nil {
		return 0, ErrNotHolder
	}
	if err := r.k.live(e); err != nil {
		return 0, err
	}
	return e.v.Token(held)
}

// Len reports how many keys have a lock.
func (r *RWRegistry) Len() int {
	if r == nil {
		return 0
	}
	return r.k.len()
}

// Close closes every lock of the registry; later calls return ErrClosed.
func (r *RWRegistry) Close() error {
	if r == nil {
		return errNil("RWRegistry")
	}
	r.k.close()
	return nil
}

// SemaphoreRegistry hands out semaphores of n leases by key below a root
// path, with Registry's bounded memory.
type SemaphoreRegistry struct {
	k keyed[*Semaphore]
	n int
}

type semEntryKey struct{ r *SemaphoreRegistry }

// NewSemaphoreRegistry returns a registry of semaphores of n leases at
// root/<key> on s.
func NewSemaphoreRegistry(s *zklock.Session, root string, n int, opts ...Option) (*SemaphoreRegistry, error) {
	if s == nil {
		return nil, zklock.ErrNilSession
	}
	if err := zklock.ValidatePath(root); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: %d leases", ErrInvalidOption, n)
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.maxHandoffs > 0 {
		return nil, fmt.Errorf("%w: hand-off is for Lock only", ErrInvalidOption)
	}
	if cfg.revocable {
		return nil, fmt.Errorf("%w: revocation is for Lock only", ErrInvalidOption)
	}
	r := &SemaphoreRegistry{n: n}
	r.k.m = map[string]*keyedEntry[*Semaphore]{}
	r.k.mk = func(key string) (*Semaphore, error) { return newSemaphore(s, root+"/"+key, n, cfg) }
	return r, nil
}

// Acquire is Semaphore.Acquire on key's semaphore; release with Release.
func (r *SemaphoreRegistry) Acquire(ctx context.Context, key string, k int) (context.Context, error) {
	held, _, err := r.acquire(ctx, key, k, true)
	return held, err
}

// TryAcquire is Semaphore.TryAcquire on key's semaphore.
func (r *SemaphoreRegistry) TryAcquire(ctx context.Context, key string, k int) (context.Context, bool, error) {
	return r.acquire(ctx, key, k, false)
}

func (r *SemaphoreRegistry) acquire(ctx context.Context, key string, k int, wait bool) (context.Context, bool, error) {
	if r == nil {
		return nil, false, errNil("SemaphoreRegistry")
	}
	if ctx == nil {
		return nil, false, ErrNilContext
	}
	e, err := r.k.ref(key)
	if err != nil {
		return nil, false, err
	}
	var held context.Context
	ok := true
	if wait {
		held, err = e.v.Acquire(ctx, k)
	} else {
		held, ok, err = e.v.TryAcquire(ctx, k)
	}
	if err != nil || !ok {
		r.k.unref(e)
		return nil, ok, err
	}
	return context.WithValue(held, semEntryKey{r}, e), true, nil
}

// Release is Semaphore.Release for a hold of this registry.
func (r *SemaphoreRegistry) Release(held context.Context) error {
	if r == nil {
		return errNil("SemaphoreRegistry")
	}
	if held == nil {
		return ErrNilContext
	}
	e, _ := held.Value(semEntryKey{r}).(*keyedEntry[*Semaphore])
	if e == nil {
		return ErrNotHolder
	}
	if err := r.k.live(e); err != nil {
		return err
	}
	err := e.v.Release(held)
	if err == nil || isLost(err) {
		r.k.unref(e)
	}
	return err
}

// Len reports how many keys have a semaphore.
func (r *SemaphoreRegistry) Len() int {
	if r == nil {
		return 0
	}
	return r.k.len()
}

// Close closes every semaphore of the registry; later calls return
// ErrClosed.
func (r *SemaphoreRegistry) Close() error {
	if r == nil {
		return errNil("SemaphoreRegistry")
	}
	r.k.close()
	return nil
}

func isLost(err error) bool { return errors.Is(err, ErrLockLost) }

package tier

import (
	"context"
	"errors"

	"github.com/tierlock/tierlock/zklock"
)

// Registry hands out locks by key below a root path (one lock per job or per
// resource), shared by every caller in the process, for schedulers with
// many keys. It owns its locks: a key's lock exists while some call is
// acquiring or holding it (a reference count per key), and is closed and
// forgotten when the last hold is released, so memory stays bounded by the
// keys in use, whatever sequence of calls passes through.
//
// Callers never see the *Lock: they acquire by key and release by the held
// context, as with a Lock.
type Registry struct{ k keyed[*Lock] }

type entryKey struct{ r *Registry }

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
	r := &Registry{}
	r.k.m = map[string]*keyedEntry[*Lock]{}
	r.k.mk = func(key string) (*Lock, error) { return newLock(s, root+"/"+key, cfg) }
	return r, nil
}

// Acquire is Lock.Acquire on key's lock. The returned context carries the
// hold (and re-enters like a Lock's); release it with Registry.Release.
func (r *Registry) Acquire(ctx context.Context, key string) (context.Context, error) {
	held, _, err := r.acquire(ctx, key, true)
	return held, err
}

// TryAcquire is Lock.TryAcquire on key's lock.
func (r *Registry) TryAcquire(ctx context.Context, key string) (context.Context, bool, error) {
	return r.acquire(ctx, key, false)
}

func (r *Registry) acquire(ctx context.Context, key string, wait bool) (context.Context, bool, error) {
	if r == nil {
		return nil, false, errNil("Registry")
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
		held, err = e.v.Acquire(ctx)
	} else {
		held, ok, err = e.v.TryAcquire(ctx)
	}
	if err != nil || !ok {
		r.k.unref(e)
		return nil, ok, err
	}
	if cur, _ := held.Value(entryKey{r}).(*keyedEntry[*Lock]); cur == e {
		return held, true, nil // a re-entry: ctx already names this entry
	}
	return context.WithValue(held, entryKey{r}, e), true, nil
}

// Release is Lock.Release for a hold Acquire or TryAcquire returned. The
// last release of a key's last hold closes its lock.
func (r *Registry) Release(held context.Context) error {
	if r == nil {
		return errNil("Registry")
	}
	if held == nil {
		return ErrNilContext
	}
	e, err := r.entryOf(held)
	if err != nil {
		return err
	}
	err = e.v.Release(held)
	if err == nil || errors.Is(err, ErrLockLost) {
		// Released (a lost hold's last Release frees the gate too).
		r.k.unref(e)
	}
	return err
}

// Token is Lock.Token for a hold of this registry.
func (r *Registry) Token(held context.Context) (int64, error) {
	if r == nil {
		return 0, errNil("Registry")
	}
	if held == nil {
		return 0, ErrNilContext
	}
	e, err := r.entryOf(held)
	if err != nil {
		return 0, err
	}
	return e.v.Token(held)
}

// Revoked is Lock.Revoked for a hold of this registry (see WithRevocable):
// closed when a revocation request for the hold arrives, and when ctx
// holds none of the registry's locks.
func (r *Registry) Revoked(held context.Context) <-chan struct{} {
	if r == nil || held == nil {
		return closedChan
	}
	e, err := r.entryOf(held)
	if err != nil {
		return closedChan
	}
	return e.v.Revoked(held)
}

// HoldCount is Lock.HoldCount for a hold of this registry: 0 when ctx holds
// none of its locks.
func (r *Registry) HoldCount(ctx context.Context) int {
	if r == nil || ctx == nil {
		return 0
	}
	e, _ := ctx.Value(entryKey{r}).(*keyedEntry[*Lock])
	if e == nil {
		return 0
	}
	return e.v.HoldCount(ctx)
}

// entryOf returns the entry whose hold ctx carries, if it is still in use:
// a context whose key's lock was closed after its last release holds
// nothing (ErrNotHolder), unless the whole registry was closed (ErrClosed).
func (r *Registry) entryOf(ctx context.Context) (*keyedEntry[*Lock], error) {
	e, _ := ctx.Value(entryKey{r}).(*keyedEntry[*Lock])
	if e == nil {
		return nil, ErrNotHolder
	}
	if err := r.k.live(e); err != nil {
		return nil, err
	}
	return e, nil
}

// Len reports how many keys have a lock: keys being acquired or held.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	return r.k.len()
}

// Close closes every lock of the registry: holds are cancelled (cause
// ErrClosed), waiters get ErrClosed, and later calls return ErrClosed.
// Close is idempotent.
func (r *Registry) Close() error {
	if r == nil {
		return errNil("Registry")
	}
	r.k.close()
	return nil
}

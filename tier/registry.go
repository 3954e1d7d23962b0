package tier

import (
	"context"
	"errors"
	"sync"

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
type Registry struct {
	s    *zklock.Session
	root string
	cfg  config

	mu     sync.Mutex
	locks  map[string]*entry
	closed bool
}

// entry is one key's lock and the calls that use it: acquisitions in
// progress plus acquisitions (re-entries included) not yet released.
type entry struct {
	key  string
	l    *Lock
	refs int // under Registry.mu
}

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
	return &Registry{s: s, root: root, cfg: cfg, locks: make(map[string]*entry)}, nil
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
		return nil, false, ErrNilRegistry
	}
	if ctx == nil {
		return nil, false, ErrNilContext
	}
	e, err := r.ref(key)
	if err != nil {
		return nil, false, err
	}
	var held context.Context
	ok := true
	if wait {
		held, err = e.l.Acquire(ctx)
	} else {
		held, ok, err = e.l.TryAcquire(ctx)
	}
	if err != nil || !ok {
		r.unref(e)
		return nil, ok, err
	}
	if cur, _ := held.Value(entryKey{r}).(*entry); cur == e {
		return held, true, nil // a re-entry: ctx already names this entry
	}
	return context.WithValue(held, entryKey{r}, e), true, nil
}

// Release is Lock.Release for a hold Acquire or TryAcquire returned. The
// last release of a key's last hold closes its lock.
func (r *Registry) Release(held context.Context) error {
	if r == nil {
		return ErrNilRegistry
	}
	if held == nil {
		return ErrNilContext
	}
	e, err := r.entryOf(held)
	if err != nil {
		return err
	}
	err = e.l.Release(held)
	if err == nil || errors.Is(err, ErrLockLost) {
		// Released (a lost hold's last Release frees the gate too).
		r.unref(e)
	}
	return err
}

// Token is Lock.Token for a hold of this registry.
func (r *Registry) Token(held context.Context) (int64, error) {
	if r == nil {
		return 0, ErrNilRegistry
	}
	if held == nil {
		return 0, ErrNilContext
	}
	e, err := r.entryOf(held)
	if err != nil {
		return 0, err
	}
	return e.l.Token(held)
}

// HoldCount is Lock.HoldCount for a hold of this registry: 0 when ctx holds
// none of its locks.
func (r *Registry) HoldCount(ctx context.Context) int {
	if r == nil || ctx == nil {
		return 0
	}
	e, _ := ctx.Value(entryKey{r}).(*entry)
	if e == nil {
		return 0
	}
	return e.l.HoldCount(ctx)
}

// entryOf returns the entry whose hold ctx carries, if it is still in use:
// a context whose key's lock was closed after its last release holds
// nothing (ErrNotHolder), unless the whole registry was closed (ErrClosed).
func (r *Registry) entryOf(ctx context.Context) (*entry, error) {
	e, _ := ctx.Value(entryKey{r}).(*entry)
	if e == nil {
		return nil, ErrNotHolder
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return nil, ErrClosed
	case r.locks[e.key] != e:
		return nil, ErrNotHolder
	}
	return e, nil
}

// ref returns key's entry, making its lock if needed, with one more user.
func (r *Registry) ref(key string) (*entry, error) {
	if err := zklock.ValidateKey(key); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	e := r.locks[key]
	if e == nil {
		l, err := newLock(r.s, r.root+"/"+key, r.cfg)
		if err != nil {
			return nil, err
		}
		e = &entry{key: key, l: l}
		r.locks[key] = e
	}
	e.refs++
	return e, nil
}

// unref counts one user less; the last one closes the lock. Its gate is
// free then (no acquisition in progress, no hold), so Close has nothing to
// wait for.
func (r *Registry) unref(e *entry) {
	r.mu.Lock()
	e.refs--
	last := e.refs == 0 && r.locks[e.key] == e
	if last {
		delete(r.locks, e.key)
	}
	r.mu.Unlock()
	if last {
		_ = e.l.Close()
	}
}

// Len reports how many keys have a lock: keys being acquired or held.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.locks)
}

// Close closes every lock of the registry: holds are cancelled (cause
// ErrClosed), waiters get ErrClosed, and later calls return ErrClosed.
// Close is idempotent.
func (r *Registry) Close() error {
	if r == nil {
		return ErrNilRegistry
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	locks := r.locks
	r.locks = map[string]*entry{}
	r.mu.Unlock()
	for _, e := range locks {
		_ = e.l.Close()
	}
	return nil
}

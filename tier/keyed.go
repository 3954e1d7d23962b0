package tier

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/tierlock/tierlock/zklock"
)

// keyed is the bounded map behind the registries: a key's lock exists
// while some call is acquiring or holding it (a reference count per key)
// and is closed and forgotten with the last release, so memory stays
// bounded by the keys in use.
type keyed[T keyedLock] struct {
	mu     sync.Mutex
	m      map[string]*keyedEntry[T]
	closed bool
	mk     func(key string) (T, error)
}

// keyedLock is what a registry needs of its locks: Lock, RWLock and
// Semaphore all have it.
type keyedLock interface {
	Release(held context.Context) error
	Token(held context.Context) (int64, error)
	HoldCount(held context.Context) int
	Close() error
}

type keyedEntry[T any] struct {
	key  string
	v    T
	refs int
}

// registry is the one implementation of Registry, RWRegistry and
// SemaphoreRegistry: acquire by key, and release, read the token or count
// by the held context, which names the entry it holds.
type registry[T keyedLock] struct {
	k      keyed[T]
	log    *slog.Logger // the session's, naming the root
	takers string       // the methods that return a held context
}

// regKey keys a held context's entry by its registry.
type regKey[T keyedLock] struct{ r *registry[T] }

// init makes r a registry at root on s, of locks mk makes by path;
// takers names the registry's methods that return a held context, for
// the warning of a Release given another context (misuse.go).
func (r *registry[T]) init(s *zklock.Session, root, takers string, mk func(path string) (T, error)) error {
	if s == nil {
		return fromZK(ErrNilSession) // as New's
	}
	if err := validateRoot(root); err != nil {
		return err
	}
	select {
	case <-s.Done():
		return fromZK(ErrSessionClosed) // as New's would be, at the first key
	default:
	}
	r.log, r.takers = s.Logger().With("registry", root), takers
	r.k.m = map[string]*keyedEntry[T]{}
	r.k.mk = func(key string) (T, error) { return mk(root + "/" + key) }
	return nil
}

// acquire takes key's lock with take (one of its acquire methods) and
// returns the held context, naming the entry.
func (r *registry[T]) acquire(ctx context.Context, key string, take func(T) (context.Context, bool, error)) (context.Context, bool, error) {
	if ctx == nil {
		return nil, false, ErrNilContext
	}
	e, err := r.k.ref(key)
	if err != nil {
		return nil, false, err
	}
	held, ok, err := take(e.v)
	if err != nil || !ok {
		r.k.unref(e)
		return nil, ok, withKey(err, key)
	}
	if cur, _ := held.Value(regKey[T]{r}).(*keyedEntry[T]); cur == e {
		return held, true, nil // a re-entry: held already names this entry
	}
	return context.WithValue(held, regKey[T]{r}, e), true, nil
}

// entryOf returns the entry whose hold held carries, if it is still in use:
// a context whose key's lock was closed after its last release holds
// nothing (ErrNotHolder), unless the whole registry was closed (ErrClosed).
func (r *registry[T]) entryOf(held context.Context) (*keyedEntry[T], error) {
	if held == nil {
		return nil, ErrNilContext
	}
	e, _ := held.Value(regKey[T]{r}).(*keyedEntry[T])
	if e == nil {
		return nil, ErrNotHolder
	}
	if err := r.k.live(e); err != nil {
		return nil, err
	}
	return e, nil
}

// release releases held's hold; the last release of a key's last hold
// closes its lock. Every Release that ended the acquisition drops its
// reference, whatever it returns (a lost hold, a failed delete): only
// ErrNotHolder and ErrNilContext say that nothing was released, and
// keeping the reference on any other error would keep the key's lock, and
// its node, for the session's life.
//
// A context that carries no hold of this registry at all (the one passed
// to Acquire, say) releases nothing and is logged at Warn (misuse.go): the
// registry cannot know which of its holds was meant.
func (r *registry[T]) release(held context.Context) error {
	if held != nil && held.Value(regKey[T]{r}) == nil {
		return warnNotHolder(r.log, "registry", r.takers)
	}
	e, err := r.entryOf(held)
	if err != nil {
		return err
	}
	err = e.v.Release(held)
	if !errors.Is(err, ErrNotHolder) && !errors.Is(err, ErrNilContext) {
		r.k.unref(e)
	}
	return err
}

func (r *registry[T]) token(held context.Context) (int64, error) {
	e, err := r.entryOf(held)
	if err != nil {
		return 0, err
	}
	return e.v.Token(held)
}

func (r *registry[T]) holdCount(held context.Context) int {
	if held == nil {
		return 0
	}
	e, _ := held.Value(regKey[T]{r}).(*keyedEntry[T])
	if e == nil {
		return 0
	}
	return e.v.HoldCount(held)
}

// validateRoot checks a registry's root as a lock path (the keys' locks
// are below it), and reports a bad one as a registry root, not as a lock:
// the error matches ErrInvalidPath.
func validateRoot(root string) error {
	err := zklock.ValidatePath(root)
	switch {
	case err == nil:
		return nil
	case root == "/":
		return rootError{root: root, why: "the registry needs a node of its own below ZooKeeper's root", err: err}
	}
	// zklock's detail, without its sentinel's text and the path it quotes.
	why := strings.TrimPrefix(err.Error(), ErrInvalidPath.Error()+": ")
	why = strings.TrimLeft(strings.TrimPrefix(why, strconv.Quote(root)), ": ")
	return rootError{root: root, why: strings.ReplaceAll(why, "zklock: ", ""), err: err}
}

func (k *keyed[T]) ref(key string) (*keyedEntry[T], error) {
	if err := zklock.ValidateKey(key); err != nil {
		return nil, fromZK(err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, ErrClosed
	}
	e := k.m[key]
	if e == nil {
		v, err := k.mk(key)
		if err != nil {
			return nil, fromZK(err)
		}
		e = &keyedEntry[T]{key: key, v: v}
		k.m[key] = e
	}
	e.refs++
	return e, nil
}

func (k *keyed[T]) unref(e *keyedEntry[T]) {
	k.mu.Lock()
	e.refs--
	last := e.refs == 0 && k.m[e.key] == e
	if last {
		delete(k.m, e.key)
	}
	k.mu.Unlock()
	if last {
		_ = e.v.Close()
	}
}

// live reports whether e is still the entry of its key.
func (k *keyed[T]) live(e *keyedEntry[T]) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.closed:
		return ErrClosed
	case k.m[e.key] != e:
		return ErrNotHolder
	}
	return nil
}

func (k *keyed[T]) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.m)
}

func (k *keyed[T]) close() {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return
	}
	k.closed = true
	m := k.m
	k.m = map[string]*keyedEntry[T]{}
	k.mu.Unlock()
	for _, e := range m {
		_ = e.v.Close()
	}
}

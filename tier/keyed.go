package tier

import (
	"sync"

	"github.com/tierlock/tierlock/zklock"
)

// keyed is the bounded map behind Registry, RWRegistry and
// SemaphoreRegistry: a key's value exists while some call is acquiring or
// holding it (a reference count per key) and is closed and forgotten with
// the last release, so memory stays bounded by the keys in use.
type keyed[T interface{ Close() error }] struct {
	mu     sync.Mutex
	m      map[string]*keyedEntry[T]
	closed bool
	mk     func(key string) (T, error)
}

type keyedEntry[T any] struct {
	key  string
	v    T
	refs int
}

func (k *keyed[T]) ref(key string) (*keyedEntry[T], error) {
	if err := zklock.ValidateKey(key); err != nil {
		return nil, err
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
			return nil, err
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

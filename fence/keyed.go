package fence

import "sync"

// Keyed is a Fence per key, for a resource made of parts each guarded by a
// lock of its own (a registry's keys, say). The zero value is ready to use.
// It is safe for concurrent use; fences of different keys do not wait for
// each other. A key's fence is kept for the Keyed's life (forgetting it
// would let a stale token in again), so memory grows with the keys seen.
type Keyed[K comparable] struct {
	mu sync.Mutex
	m  map[K]*Fence
}

// fence returns key's fence, making it on first use.
func (k *Keyed[K]) fence(key K) *Fence {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = make(map[K]*Fence)
	}
	f := k.m[key]
	if f == nil {
		f = &Fence{}
		k.m[key] = f
	}
	return f
}

// Admit is Fence.Admit on key's fence.
func (k *Keyed[K]) Admit(key K, token int64) error {
	if k == nil {
		return ErrNil
	}
	if err := checkToken(token); err != nil {
		return err // no fence made for a key that never had a token
	}
	return k.fence(key).Admit(token)
}

// Do is Fence.Do on key's fence.
func (k *Keyed[K]) Do(key K, token int64, fn func() error) error {
	if k == nil {
		return ErrNil
	}
	if fn == nil {
		return ErrNilFunc
	}
	if err := checkToken(token); err != nil {
		return err
	}
	return k.fence(key).Do(token, fn)
}

// High is Fence.High on key's fence: 0 for a key never admitted.
func (k *Keyed[K]) High(key K) int64 {
	if k == nil {
		return 0
	}
	k.mu.Lock()
	f := k.m[key]
	k.mu.Unlock()
	return f.High()
}

package fence

import (
	"errors"
	"fmt"
	"sync"
)

// Errors of this package.
var (
	// ErrStaleToken reports a token lower than the highest one admitted:
	// its holder's lock has passed to a later holder.
	ErrStaleToken = errors.New("fence: stale token")
	// ErrInvalidToken reports a token that no hold has: zero (what
	// Token returns without a hold) or negative.
	ErrInvalidToken = errors.New("fence: invalid token")
	// ErrNil reports a method called on a nil *Fence or *Keyed.
	ErrNil = errors.New("fence: method called on a nil *Fence or *Keyed")
	// ErrNilFunc reports a nil function given to Do.
	ErrNilFunc = errors.New("fence: nil function")
)

// Fence admits non-decreasing fencing tokens. The zero value is ready to
// use and has admitted nothing. It is safe for concurrent use.
type Fence struct {
	mu   sync.Mutex
	high int64 // the highest token admitted; 0: none
}

// Admit admits token if it is at least the highest token admitted so far,
// raising that to token, and returns an error wrapping ErrStaleToken
// otherwise. See Do for a write that must not follow a later admission.
func (f *Fence) Admit(token int64) error {
	if f == nil {
		return ErrNil
	}
	if err := checkToken(token); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.admitLocked(token)
}

// checkToken refuses tokens no hold has.
func checkToken(token int64) error {
	if token <= 0 {
		return fmt.Errorf("%w: %d", ErrInvalidToken, token)
	}
	return nil
}

func (f *Fence) admitLocked(token int64) error {
	if token < f.high {
		return fmt.Errorf("%w: %d is below %d", ErrStaleToken, token, f.high)
	}
	f.high = token
	return nil
}

// Do admits token as Admit does and, if it is admitted, runs fn before any
// other token can be admitted, returning fn's error: every write made
// through Do therefore happens in token order, and none of a stale holder's
// follows a later holder's admission. A token admitted stays admitted when
// fn fails: the fence only ever moves up. fn must not call the fence.
func (f *Fence) Do(token int64, fn func() error) error {
	if f == nil {
		return ErrNil
	}
	if fn == nil {
		return ErrNilFunc
	}
	if err := checkToken(token); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.admitLocked(token); err != nil {
		return err
	}
	return fn()
}

// High returns the highest token admitted, 0 if none.
func (f *Fence) High() int64 {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.high
}

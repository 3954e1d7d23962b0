package tier

import (
	"context"
	"errors"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// Locker returns a sync.Locker on l for code that holds one: Lock blocks
// until the lock is held, retrying failed attempts (a lost connection,
// say) with back-off; Unlock releases it.
//
// The sync.Locker interface has no way to say that a hold was lost, so the
// adapter adds one: Context returns the held context of the current hold,
// which is cancelled when the hold is lost (context.Cause wraps
// ErrLockLost), and Err reports the loss. Code under the lock should watch
// Context().Done() as it would a held context from Acquire; code that
// cannot is no safer than the interface allows.
//
// The adapter is not reentrant: a goroutine that calls Lock twice without
// Unlock deadlocks, as with sync.Mutex. Unlock without Lock, or of a hold
// that was lost, is logged and otherwise ignored. Lock on a closed lock or
// session (or a nil *Locker) cannot hold and returns at once: Context is
// then cancelled and Err says why, as for a lost hold. Use Acquire and
// Release for reentrancy, cancellation and error values.
func (l *Lock) Locker() *Locker { return &Locker{l: l} }

// Locker is the sync.Locker adapter of a Lock; see Lock.Locker.
type Locker struct {
	l      *Lock
	held   context.Context // written and read only by the holder
	failed bool            // held is not a hold: Lock could not take one
}

// Lock blocks until the lock is held, or until it is clear that it never
// will be (see Lock.Locker).
func (k *Locker) Lock() {
	if k == nil {
		return // Err reports it
	}
	wait := 10 * time.Millisecond
	for {
		held, err := k.l.Acquire(context.Background())
		if err == nil {
			k.held, k.failed = held, false
			return
		}
		if errors.Is(err, ErrClosed) || errors.Is(err, zklock.ErrSessionClosed) || errors.Is(err, ErrNil) {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(err)
			k.held, k.failed = ctx, true
			return
		}
		k.l.log.Warn("Locker.Lock: acquire failed, retrying", "err", err, "in", wait)
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}

// Unlock releases the lock.
func (k *Locker) Unlock() {
	if k == nil || k.l == nil {
		return // nothing to unlock; sync.Locker has no error to return
	}
	held, failed := k.held, k.failed
	k.held, k.failed = nil, false
	switch {
	case failed:
		return // Lock could not hold: nothing to release
	case held == nil:
		k.l.log.Error("Locker.Unlock of an unlocked lock")
		return
	}
	if err := k.l.Release(held); err != nil {
		k.l.log.Error("Locker.Unlock", "err", err)
	}
}

// Context returns the held context of the current hold, cancelled when the
// hold is lost or released; outside a hold it returns an already cancelled
// context. Call it from the goroutine that called Lock.
func (k *Locker) Context() context.Context {
	if k == nil || k.held == nil {
		return cancelledCtx
	}
	return k.held
}

// Err returns nil while the current hold is valid, an error wrapping
// ErrLockLost once it was lost, why Lock could not hold, and ErrNotHolder
// outside a hold. Call it from the goroutine that called Lock.
func (k *Locker) Err() error {
	switch {
	case k == nil:
		return errNil("Locker")
	case k.held == nil:
		return ErrNotHolder
	case k.held.Err() != nil:
		return context.Cause(k.held)
	}
	return nil
}

var cancelledCtx = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrNotHolder)
	return ctx
}()

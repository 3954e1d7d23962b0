package tier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// Locker returns a sync.Locker on l for code that holds one: Lock blocks
// until the lock is held, retrying with back-off what can pass (a lost
// connection or session, an outage); Unlock releases it.
//
// Lock never returns without the lock. Where it cannot lock it panics, as
// etcd's concurrency.NewLocker does: a sync.Locker's caller has no error
// to look at, and code after Lock runs as if it held the lock. It cannot
// lock when the lock or its session is closed (before Lock or while it
// waits), on a nil *Locker, and when the acquisition is refused in a way
// that retrying cannot change: the server rejects the lock's ACL
// (zk.ErrInvalidACL), the lock path's or a parent's ACL refuses this
// session's create (zk.ErrNoAuth), the lock path or a parent is an
// ephemeral node (zk.ErrNoChildrenForEphemerals), the session's
// credentials were refused (zk.ErrAuthFailed), or the lock node's create
// is too large for a request (zklock.ErrInvalidOption). The panic's value
// is an error whose message names the lock's path and the reason, and
// which wraps it. Close a lock only once no goroutine can still call Lock
// on its Locker, or use Acquire, which returns the error.
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
// that was lost, is logged and otherwise ignored. Use Acquire and Release
// for reentrancy, cancellation and error values.
func (l *Lock) Locker() *Locker { return &Locker{l: l} }

// Locker is the sync.Locker adapter of a Lock; see Lock.Locker.
type Locker struct {
	l    *Lock
	held context.Context // written and read only by the holder
}

// Lock blocks until the lock is held. It panics where the lock can never
// be held: the lock or its session closed, a nil *Locker, an acquisition
// refused in a way that retrying cannot change (see Lock.Locker).
func (k *Locker) Lock() {
	if k == nil || k.l == nil {
		panic(fmt.Errorf("tier: Locker.Lock cannot lock: %w", errNil("Locker")))
	}
	wait := 10 * time.Millisecond
	for {
		held, err := k.l.Acquire(context.Background())
		if err == nil && held != nil {
			k.held = held
			return
		}
		if cannotLock(err) {
			panic(fmt.Errorf("tier: Locker.Lock of %s cannot lock: %w", k.l.Path(), err))
		}
		k.l.log.Warn("Locker.Lock: acquire failed, retrying", "path", k.l.Path(), "err", err, "in", wait)
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}

// cannotLock reports whether err, which ended an Acquire whose context
// never ends, is one that no retry can change. zklock retries within
// Acquire what can pass (a lost connection, an expired session, an
// outage, zk.ErrNoServer, a parent removed between its making and the
// create, which it makes again) and returns the server's refusals, which
// are permanent for the lock as it is made, but one: zk.ErrNoNode, which
// zklock returns only when the session's chroot is gone, and which an
// operator may create again. An error not listed here is retried: a
// Locker that waits on something new warns each second, where one that
// panicked on it would end a program that could have gone on.
func cannotLock(err error) bool {
	for _, e := range permanent {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

var permanent = []error{
	ErrClosed, zklock.ErrSessionClosed, ErrNil, // nothing left to lock with
	zk.ErrInvalidACL,              // the server rejects the lock's ACL
	zk.ErrNoAuth,                  // the lock path's or a parent's ACL refuses this session's create
	zk.ErrNoChildrenForEphemerals, // the lock path or a parent is an ephemeral node
	zk.ErrAuthFailed,              // the session's credentials were refused
	zklock.ErrInvalidOption,       // the lock node's create too large for a request (its ACL, its label)
	zklock.ErrInvalidPath, zk.ErrInvalidPath, zk.ErrBadArguments, zk.ErrInvalidFlags, zk.ErrShortBuffer,
}

// Unlock releases the lock.
func (k *Locker) Unlock() {
	if k == nil || k.l == nil {
		return // nothing to unlock; sync.Locker has no error to return
	}
	held := k.held
	k.held = nil
	if held == nil {
		k.l.log.Error("Locker.Unlock of an unlocked lock", "path", k.l.Path())
		return
	}
	if err := k.l.Release(held); err != nil {
		k.l.log.Error("Locker.Unlock", "path", k.l.Path(), "err", err)
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
// ErrLockLost once it was lost, and ErrNotHolder outside a hold. Call it
// from the goroutine that called Lock.
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

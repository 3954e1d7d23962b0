package tier

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// Locker returns a sync.Locker on l for code that holds one: Lock blocks
// until the lock is held, retrying failed attempts (a lost connection,
// say) with back-off; Unlock releases it.
//
// The adapter is not reentrant: a goroutine that calls Lock twice without
// Unlock deadlocks, as with sync.Mutex. It cannot report errors: Unlock
// without Lock, or of a hold that was lost, is logged and otherwise
// ignored, and Lock on a closed lock or session panics (there is no lock
// to return with). Use Acquire and Release for reentrancy, cancellation,
// error values and the lost-lock context.
func (l *Lock) Locker() sync.Locker { return &locker{l: l} }

type locker struct {
	l    *Lock
	held context.Context // written and read only by the holder
}

func (k *locker) Lock() {
	wait := 10 * time.Millisecond
	for {
		held, err := k.l.Acquire(context.Background())
		if err == nil {
			k.held = held
			return
		}
		if errors.Is(err, ErrClosed) || errors.Is(err, zklock.ErrSessionClosed) || errors.Is(err, ErrNilLock) {
			panic("tier: Locker.Lock: " + err.Error())
		}
		k.l.log.Warn("Locker.Lock: acquire failed, retrying", "err", err, "in", wait)
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}

func (k *locker) Unlock() {
	held := k.held
	if held == nil {
		k.l.log.Error("Locker.Unlock of an unlocked lock")
		return
	}
	k.held = nil
	if err := k.l.Release(held); err != nil {
		k.l.log.Error("Locker.Unlock", "err", err)
	}
}

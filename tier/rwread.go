package tier

import (
	"context"
	"time"
)

// The read side of RWLock: readers admitted by tier 1 share the process's
// read node (the downgrade that moves reads taken under a write hold onto
// one is in rwwrite.go).

func (rw *RWLock) rlock(ctx context.Context, wait bool) (context.Context, bool, error) {
	if err := rw.check(ctx); err != nil {
		return nil, false, err
	}
	rw.mu.Lock()
	held, again, err := rw.reenterLocked(ctx, false)
	if again {
		rw.mu.Unlock()
		return held, err == nil, err
	}
	start, refused := time.Now(), rw.life.isClosed()
	if w := rw.holdOfLocked(ctx, true); w != nil && !refused {
		held, err := rw.readUnderWriteLocked(ctx, w) // unlocks mu
		return rw.acquired(ctx, held, TierHandoff, start, false, wait, err)
	}
	rw.mu.Unlock()
	if wait {
		rw.obs.observe(Event{Kind: Acquiring})
	}
	held, tier, err := rw.readAdmitted(ctx, wait)
	return rw.acquired(ctx, held, tier, start, refused, wait, err)
}

// readAdmitted admits a reader (one unit of tier 1) and takes it onto the
// read node; the unit goes back if it fails.
func (rw *RWLock) readAdmitted(ctx context.Context, wait bool) (context.Context, Tier, error) {
	if rw.life.isClosed() {
		return nil, 0, ErrClosed
	}
	if ok, err := rw.admit(ctx, 1, wait); !ok || err != nil {
		return nil, 0, err
	}
	held, tier, err := rw.readNode(ctx, wait)
	if held == nil {
		rw.adm.release(1)
	}
	return held, tier, err
}

// readUnderWriteLocked takes a read hold under our own write hold w: it
// rides on the write node, with no unit of its own (the writer has them
// all). mu is held and released.
func (rw *RWLock) readUnderWriteLocked(ctx context.Context, w *rwHold) (context.Context, error) {
	defer rw.mu.Unlock()
	if w.ctx.Err() != nil {
		return nil, context.Cause(w.ctx)
	}
	if testHookRWPublish != nil {
		testHookRWPublish(rw)
	}
	var h *rwHold
	err := rw.life.publish(func() {
		rw.downs++
		h = rw.newHold(ctx, false, rw.wHold)
		h.down = true
	}, func() {
		if rw.withdraw(h) {
			rw.downs--
		}
	})
	if err != nil {
		return nil, err
	}
	return h.ctx, nil
}

// readNode takes a reader, admitted with its unit, onto the process's read
// node: it rides the held node (TierHandoff), waits for the reader queueing
// it (or for a node closed to riders to go), or queues it (TierZooKeeper).
// A try that finds a writer first returns no context and no error.
func (rw *RWLock) readNode(ctx context.Context, wait bool) (context.Context, Tier, error) {
	mine := false // this reader queued the held node: nobody rode it before
	for {
		rw.mu.Lock()
		var wake <-chan struct{}
		switch rw.rState {
		case rHeld:
			if !mine {
				switch rw.mayRideLocked(ctx) {
				case rideAgain:
					rw.mu.Unlock()
					continue
				case rideNo:
					wake = rw.rGone
				}
			}
			if wake == nil {
				held, err := rw.rideLocked(ctx) // unlocks mu
				if mine {
					return held, TierZooKeeper, err
				}
				return held, TierHandoff, err
			}
		case rAcquiring:
			wake = rw.rDone
		default: // rIdle: this reader queues the node for all
			if ok, err := rw.queueReadNodeLocked(ctx, wait); err != nil || !ok {
				return nil, 0, err
			}
			// Queued and held; look again under mu (the node may have
			// been lost, and forgotten, meanwhile).
			mine = true
			continue
		}
		rw.mu.Unlock()
		if !wait {
			return nil, 0, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-rw.life.done:
			return nil, 0, ErrClosed
		}
	}
}

// rideLocked puts a reader on the held read node; mu is held and released.
// The caller gives the reader's unit back on an error.
func (rw *RWLock) rideLocked(ctx context.Context) (context.Context, error) {
	if testHookRWPublish != nil {
		testHookRWPublish(rw)
	}
	var h *rwHold
	err := rw.life.publish(func() {
		rw.riders++
		h = rw.newHold(ctx, false, rw.rHold)
		rw.mu.Unlock()
	}, func() {
		if rw.withdraw(h) {
			rw.mu.Lock()
			err := rw.dropRiderLocked()
			rw.mu.Unlock()
			if err != nil {
				rw.log.Debug("read node release after Close", "err", err)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return h.ctx, nil
}

// What mayRideLocked finds.
const (
	rideYes   = iota
	rideNo    // the node is closed to riders: wait for rGone
	rideAgain // the node changed meanwhile: look again
)

// mayRideLocked decides whether a new reader may ride the held read node:
// not once a writer of another process is queued behind it, which would
// wait for as long as overlapping local readers keep riding. The first
// reader to see such a writer closes the node to riders (rClosed): the
// readers on it finish, the last gives it up, and the readers waiting
// meanwhile queue a new node behind the writer. mu is held; it is let go
// during the check, which costs a children listing only when the queue
// changed since the last one (zklock.RWLock.WriterWaiting). A lost node
// is forgotten (its riders' contexts are cancelled) so that a new one is
// queued.
func (rw *RWLock) mayRideLocked(ctx context.Context) int {
	zh := rw.rHold
	select {
	case <-zh.Lost():
		rw.rState, rw.rHold = rIdle, nil
		rw.openToRidersLocked()
		return rideAgain
	default:
	}
	if rw.rClosed {
		return rideNo
	}
	rw.mu.Unlock()
	waiting, err := rw.zk.WriterWaiting(ctx)
	rw.mu.Lock()
	switch {
	case rw.rState != rHeld || rw.rHold != zh:
		return rideAgain
	case rw.rClosed:
		return rideNo
	case waiting || err != nil:
		// An error leaves it unknown: stop riding, which costs a new node.
		rw.rClosed = true
		return rideNo
	}
	return rideYes
}

// openToRidersLocked ends a closure to riders, the read node being gone:
// the readers waiting for that go on to queue a new one. mu is held.
func (rw *RWLock) openToRidersLocked() {
	if rw.rClosed {
		rw.rClosed = false
		close(rw.rGone)
		rw.rGone = make(chan struct{})
	}
}

// queueReadNodeLocked queues the process's read node for every local
// reader; mu is held and released. It reports false, rState staying rIdle,
// on an error or a try that found a writer first. What it reports is
// decided under mu: the caller looks at the node's state again under mu.
func (rw *RWLock) queueReadNodeLocked(ctx context.Context, wait bool) (bool, error) {
	rw.rState = rAcquiring
	rw.rDone = make(chan struct{})
	rw.mu.Unlock()
	zh, ok, err := zkAcquire(ctx, rw.zk.ReadLock(), wait)
	rw.mu.Lock()
	defer rw.mu.Unlock()
	close(rw.rDone)
	if err != nil || !ok {
		rw.rState = rIdle
		return false, fromZK(err)
	}
	rw.rState, rw.rHold = rHeld, zh
	return true, nil
}

// leaveReaderLocked ends read hold h; mu is held and released. The last
// rider gives the read node up, then its unit: the node first, then the
// gate. The last downgraded reader of a deferred downgrade gives the write
// node and the writer's units up.
func (rw *RWLock) leaveReaderLocked(h *rwHold) error {
	if h.down {
		rw.downs--
		zw := rw.wHold
		if rw.downs > 0 || rw.writer != nil || zw == nil || rw.downgrading {
			rw.mu.Unlock()
			return nil
		}
		return rw.dropWriteLocked(zw)
	}
	err := rw.dropRiderLocked()
	rw.mu.Unlock()
	rw.adm.release(1)
	return err
}

// dropRiderLocked takes one rider off the read node; the last gives the
// node up. mu is held.
func (rw *RWLock) dropRiderLocked() error {
	rw.riders--
	if rw.riders > 0 || rw.rState != rHeld {
		return nil
	}
	err := rw.rHold.Release()
	rw.rState, rw.rHold = rIdle, nil
	rw.openToRidersLocked()
	return err
}

// Token returns the fencing token of the hold held carries: for a write
// hold, the write node's (strictly increasing across writers of the path);
// for a read hold, the node it rides on. A hold found lost as Token is
// asked (judged then, as Lock.Token judges) returns 0 and the loss.
func (rw *RWLock) Token(held context.Context) (int64, error) {
	if err := rw.check(held); err != nil {
		return 0, err
	}
	h, token, err := rw.token(held)
	if err != nil {
		return 0, err
	}
	if err := lostCause(h.ctx); err != nil { // judged outside mu: a loss found so is told through lossMu
		return 0, err
	}
	return token, nil
}

// token returns the hold held carries and its token, under mu.
func (rw *RWLock) token(held context.Context) (*rwHold, int64, error) {
	_, read := held.Value(rwKey{rw, false}).(*rwHold)
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if h := rw.holdOfLocked(held, !read); h != nil {
		rw.lossMu.Lock()
		defer rw.lossMu.Unlock()
		return h, h.token, nil
	}
	if rw.life.isClosed() {
		return nil, 0, ErrClosed
	}
	return nil, 0, ErrNotHolder
}

// HoldCount reports how many times the hold held carries (its read hold
// if it carries one, else its write hold) was taken and not yet released:
// 0 when it carries no current hold of this lock.
func (rw *RWLock) HoldCount(held context.Context) int {
	if rw == nil || held == nil {
		return 0
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	_, read := held.Value(rwKey{rw, false}).(*rwHold)
	if h := rw.holdOfLocked(held, !read); h != nil {
		return h.count
	}
	return 0
}

// Readers reports how many local read holds stand (on the read node, or
// on the write node after a downgrade).
func (rw *RWLock) Readers() int {
	if rw == nil {
		return 0
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.riders + rw.downs
}

// testHookDowngrade, when a test sets it, runs in a downgrade between the
// read node's grant and the move of the readers onto it.
var testHookDowngrade func(readNode string)

// testHookRWPublish, when a test sets it, runs between a grant (the write
// node's, a reader's admission to the read node, or a read under our own
// write hold) and the publication of its hold; rw.mu may be held.
var testHookRWPublish func(*RWLock)

package tier

import (
	"context"
	"errors"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// The write side of RWLock: a writer admitted with every unit of tier 1
// takes the process's write node; a write hold that ends with reads taken
// under it downgrades.

func (rw *RWLock) lock(ctx context.Context, wait bool) (context.Context, bool, error) {
	if err := rw.check(ctx); err != nil {
		return nil, false, err
	}
	rw.mu.Lock()
	held, again, err := rw.reenterLocked(ctx, true)
	switch {
	case again:
		rw.mu.Unlock()
		return held, err == nil, err
	case rw.holdOfLocked(ctx, false) != nil:
		rw.mu.Unlock()
		return nil, false, ErrUpgrade
	}
	rw.mu.Unlock()
	start, refused := time.Now(), rw.life.isClosed()
	if wait {
		rw.obs.observe(Event{Kind: Acquiring})
	}
	held, err = rw.writeNode(ctx, wait)
	return rw.acquired(ctx, held, TierZooKeeper, start, refused, wait, err)
}

// acquired tells the observer how a new acquisition that began at start
// ended (held nil: not acquired; err nil too: a try found it taken), and
// returns it as lock and rlock do, its error a WaitError unless the lock
// was closed before it began (refused: see waitEnded).
func (rw *RWLock) acquired(ctx, held context.Context, tier Tier, start time.Time, refused, wait bool, err error) (context.Context, bool, error) {
	if err != nil && !refused {
		err = waitEnded(ctx, rw.Path(), start, rw.gateHolder, err)
	}
	switch {
	case err != nil:
		rw.obs.observe(Event{Kind: Failed, Tier: tierOf(err), Wait: time.Since(start), Err: err, Try: !wait})
		return nil, false, err
	case held == nil:
		return nil, false, nil
	}
	rw.obs.observe(Event{Kind: Acquired, Tier: tier, Wait: time.Since(start), Try: !wait})
	return held, true, nil
}

// writeNode admits a writer (every unit of tier 1) and takes the write
// node; the units go back if it fails.
func (rw *RWLock) writeNode(ctx context.Context, wait bool) (context.Context, error) {
	if rw.life.isClosed() {
		return nil, ErrClosed
	}
	if ok, err := rw.admit(ctx, rwUnits, wait); !ok || err != nil {
		return nil, err
	}
	// Admitted: no local reader holds a unit, so the read node is gone
	// (its delete precedes our create on the session).
	zh, ok, err := zkAcquire(ctx, rw.zk.WriteLock(), wait)
	if err != nil || !ok {
		rw.adm.release(rwUnits)
		return nil, fromZK(err)
	}
	if testHookRWPublish != nil {
		testHookRWPublish(rw)
	}
	var h *rwHold
	err = rw.life.publish(func() {
		rw.mu.Lock()
		rw.wHold = zh
		rw.writer = rw.newHold(ctx, true, zh)
		h = rw.writer
		rw.mu.Unlock()
	}, func() {
		if rw.withdraw(h) {
			rw.mu.Lock()
			rw.writer, rw.wHold = nil, nil
			rw.mu.Unlock()
			_ = zh.Release()
			rw.adm.release(rwUnits)
		}
	})
	if err != nil {
		return nil, err
	}
	return h.ctx, nil
}

// dropWriteLocked gives the write node zw up, then the writer's units:
// the node first, then the gate; mu is held and released.
func (rw *RWLock) dropWriteLocked(zw *zklock.Hold) error {
	rw.wHold = nil
	rw.mu.Unlock()
	err := zw.Release()
	rw.adm.release(rwUnits)
	return err
}

// endWriteLocked ends the write hold; mu is held and released. With read
// holds taken under it left, it downgrades: a read node is tried, and if
// it goes at once the readers move onto it and the write node goes;
// otherwise the write node, and the writer's units, stay until the last of
// those readers leaves.
func (rw *RWLock) endWriteLocked() error {
	rw.writer = nil
	zw := rw.wHold
	if rw.downs == 0 {
		return rw.dropWriteLocked(zw)
	}
	rw.downgrading = true // the readers left may leave meanwhile, and leave the nodes to us
	rw.mu.Unlock()
	zr, ok, terr := rw.zk.ReadLock().TryAcquire(context.Background())
	rw.mu.Lock()
	rw.downgrading = false
	if terr != nil || !ok {
		// A writer of another process queued between our write node and
		// the read node (or the try failed): keep the write node until
		// the last reader leaves.
		rw.log.Debug("downgrade deferred: keeping the write node for the readers", "err", terr)
		if rw.downs > 0 {
			rw.mu.Unlock()
			return nil
		}
		return rw.dropWriteLocked(zw)
	}
	if testHookDowngrade != nil {
		testHookDowngrade(zr.Node())
	}
	moved := rw.moveDownsLocked(zr)
	rw.wHold = nil
	var err error
	if moved == 0 {
		// They all left during the try: nobody rides the read node.
		err = zr.Release()
	} else {
		rw.riders += moved
		rw.rState, rw.rHold = rHeld, zr
	}
	rw.mu.Unlock()
	err = errors.Join(zw.Release(), err)
	// The moved readers keep a unit each; the rest of the writer's go.
	rw.adm.release(rwUnits - int64(moved))
	return err
}

// moveDownsLocked moves the read holds riding the write node onto zr and
// makes them ordinary riders, each now counting one unit of the writer's;
// mu is held. A loss of zr before they moved found none of them riding
// it: it is applied here (the loss handler runs after Lost is closed, and
// we look at Lost after the move, so one of the two sees the other).
func (rw *RWLock) moveDownsLocked(zr *zklock.Hold) int {
	var moved []*rwHold
	rw.lossMu.Lock()
	for h := range rw.live {
		if h.down {
			h.node, h.token, h.down = zr.Node(), zr.Token(), false
			h.rides.Store(zr)
			moved = append(moved, h)
		}
	}
	rw.lossMu.Unlock()
	rw.downs = 0
	select {
	case <-zr.Lost():
		cause := lossCause(zr)
		for _, h := range moved {
			h.cancel(cause)
		}
	default:
	}
	return len(moved)
}

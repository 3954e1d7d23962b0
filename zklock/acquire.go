package zklock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/session"
)

// newHold makes the hold of a node that leads, with its fencing token (see
// waitTurn).
func (l *Lock) newHold(node string, owner, token int64) *Hold {
	h := &Hold{f: l.f, path: l.path, lock: holdLock{leave: l.detach, tellLost: l.lost, tellRevoked: l.revoke}, node: node, owner: owner, token: token, onGone: l.onGone, lost: make(chan struct{})}
	h.m = session.NewMember(h.lose)
	if l.revocable {
		h.revoked = make(chan struct{})
	}
	return h
}

// publish makes the granted h the lock's hold, unless the lock was closed
// meanwhile, and arms its own-node watch.
func (l *Lock) publish(h *Hold) error {
	l.mu.Lock()
	closed := l.closed
	if !closed {
		l.hold = h
	}
	l.mu.Unlock()
	if closed {
		h.released.Store(true)
		h.giveUp()
		return ErrClosed
	}
	h.armWatch(l.revocable || l.watchNode)
	return nil
}

// Acquire waits until the lock is held, ctx ends, Close is called, or an
// error that retrying cannot mend occurs, and returns the hold. Connection
// losses, failed writes and session expiries while queueing are retried.
// When it returns an error, no node of ours is left on the server (a node
// whose deletion meets a connection loss is deleted in the background as
// soon as the connection is back, or goes with its session).
func (l *Lock) Acquire(ctx context.Context) (*Hold, error) {
	h, _, err := l.acquire(ctx, true)
	return h, err
}

// TryAcquire takes the lock if no other node is ahead of ours, and never
// waits for a holder: it returns false, and deletes its node, when the lock
// is held elsewhere, or when this session's own previous node cannot be
// deleted first because the connection is down.
func (l *Lock) TryAcquire(ctx context.Context) (*Hold, bool, error) {
	return l.acquire(ctx, false)
}

func (l *Lock) acquire(ctx context.Context, wait bool) (*Hold, bool, error) {
	start := time.Now()
	if err := l.begin(ctx); err != nil {
		return nil, false, err
	}
	defer l.end()
	h, ok, err := l.acquireBegun(ctx, wait)
	if err != nil {
		err = l.explain(ctx, start, err) // who holds it: see holder.go
	}
	l.view.ended()
	return h, ok, err
}

// acquireBegun is acquire once begin let it in.
func (l *Lock) acquireBegun(ctx context.Context, wait bool) (*Hold, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err // do not queue a node only to delete it
	}
	if l.mayQueue != nil {
		if err := l.mayQueue(); err != nil {
			return nil, false, err
		}
	}
	// Close ends the acquisition through its context, whatever it waits for.
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	l.mu.Lock()
	l.abort = abort
	l.mu.Unlock()
	// A wait that could never end is refused instead (see RWLock).
	tryOnly := wait && l.noWait != nil && l.noWait()
	h, err := l.acquireNode(ctx, wait && !tryOnly)
	if hook := testHookAcquired.Load(); hook != nil {
		(*hook)(l)
	}
	switch {
	case errors.Is(context.Cause(ctx), ErrClosed):
		// Close ended the acquisition: it released h too if h was
		// published before it looked (publish checks closed under mu, and
		// Close aborts under mu before it releases the hold it found).
		return nil, false, ErrClosed
	case err != nil:
		return nil, false, err
	case h == nil && tryOnly:
		return nil, false, ErrDowngradeBlocked
	case h == nil:
		return nil, false, nil
	}
	return h, true, nil
}

// acquireNode queues a node until one leads (or, when !wait, finds it does
// not), queueing again when the node vanished while it waited.
func (l *Lock) acquireNode(ctx context.Context, wait bool) (*Hold, error) {
	if old := l.current(); old != nil {
		// A lost hold that was never released: give its node up now.
		_ = old.Release()
	}
	for {
		h, err := l.attempt(ctx, wait)
		switch {
		case err == nil:
			return h, nil
		case errors.Is(err, errNodeGone) && wait && ctx.Err() == nil && !l.f.Closed():
			// Our node vanished while we queued (the session expired, or
			// someone deleted it). We never held the lock: queue again.
			l.f.Log().Debug("lock node vanished while waiting; queueing again", "path", l.path)
		case errors.Is(err, errNodeGone):
			return nil, err // acquire's WaitError names the path
		default:
			return nil, err
		}
	}
}

// testHookAcquired, when a test sets it, runs in acquire once the node
// was granted and published (or not), before the result is returned.
var testHookAcquired atomic.Pointer[func(*Lock)]

// attempt queues one node and waits for it to lead (or not, when !wait),
// then has the session grant the hold. It returns the hold, nil when !wait
// and the lock is taken, or an error; on an error no node of ours stays
// queued.
func (l *Lock) attempt(ctx context.Context, wait bool) (*Hold, error) {
	f := l.f
	f.Waiting(1)
	defer f.Waiting(-1)
	l.view.queued("") // what an earlier node saw says nothing of this one's queue
	n, err := l.enqueue(ctx, wait)
	if errors.Is(err, errBusyDelete) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l.view.queued(n.node)
	if mutant.On(mutant.GrantBeforeListing) {
		l.leadAtOnce(&n) // seeded bug: leads without the listing's answer
	}
	token, leads, err := l.waitTurn(ctx, &n, wait)
	if err == nil && leads {
		h := l.newHold(n.node, n.owner, token)
		err = f.Grant(ctx, n.owner, h.m)
		if mutant.On(mutant.GrantLate) && err == nil {
			time.Sleep(200 * time.Millisecond) // seeded bug: handed over long after the verdict
		}
		trace.Granted(f.Conn(), l.path, n.node, n.owner, token, err)
		if err == nil {
			return h, l.publish(h)
		}
	}
	// Even a node found gone is deleted: should the finding be wrong, a
	// node left behind would block the queue for the session's life (the
	// delete ends at once if it is gone or its session is over).
	f.Writes().Delete(l.path, n.node, n.owner, nil)
	return nil, err
}

// enqueue creates our node and lists the queue, pipelined: the listing is
// sent right behind the create on the same session, so it sees our node
// and the whole exchange costs one round trip. A pending delete of the
// session goes in the same multi transaction as the create (see
// createAndList for which, and when it is taken). A create whose
// outcome is unknown (any error that is not the server's answer) may have
// been applied: before creating another, enqueueAgain looks for our GUID
// (protection mode), so no orphan blocks the queue.
func (l *Lock) enqueue(ctx context.Context, wait bool) (ourNode, error) {
	f := l.f
	// Credentials first (WithDigestAuth): a create under an ACL that
	// only they satisfy would be refused, or made anonymous.
	if err := f.AwaitAuth(ctx); err != nil {
		return ourNode{}, err
	}
	guid := newGUID()
	prefix := l.path + "/" + protectedPrefix + guid + l.marker
	n, err := l.createAndList(ctx, prefix, wait)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, errBusyDelete):
		return ourNode{}, err // nothing was sent
	case ctx.Err() == nil:
		return l.enqueueAgain(ctx, guid, prefix, err)
	case !session.Refusal(err) && !errors.Is(err, ctx.Err()):
		// The create failed, its outcome unknown, as ctx ended (when ctx
		// ended first, giveUp sweeps): the node may be there.
		l.sweepInBackground(guid)
		return ourNode{}, ctx.Err()
	}
	return ourNode{}, err
}

// enqueueAgain is the retry machinery, which a first create that
// succeeded never pays for: it makes the missing parents, and after a
// create of unknown outcome looks for our GUID before creating again.
func (l *Lock) enqueueAgain(ctx context.Context, guid, prefix string, first error) (ourNode, error) {
	f := l.f
	var n ourNode
	parentsMade, mayExist := false, false
	pending := first // the first attempt's error, classified in the first round
	err := f.Retry(ctx, func() error {
		if pending != nil {
			e := pending
			pending = nil
			return l.createFailed(e, &parentsMade, &mayExist)
		}
		if mayExist {
			found, owner, err := l.findOwn(guid)
			if err != nil {
				return err
			}
			if found != "" && owner == f.Conn().SessionID() {
				n.node, n.owner = found, owner
				return nil
			}
			if found != "" {
				// Created in a session that is now over: it goes with it.
				f.Go(func() { f.DeleteGuaranteed(found, owner) })
			}
			mayExist = false
		}
		var cerr error
		n, cerr = l.createAndList(ctx, prefix, true)
		if cerr == nil {
			return nil
		}
		return l.createFailed(cerr, &parentsMade, &mayExist)
	})
	if err != nil {
		if mayExist {
			l.sweepInBackground(guid) // given up with a create of unknown outcome
		}
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return ourNode{}, err
		}
		return ourNode{}, fmt.Errorf("zklock: queue on %s: %w", l.path, err)
	}
	return n, nil
}

// createFailed decides what a failed create asks for: the parents made
// (once), the caller told (a refusal), or protection mode (its outcome
// unknown). The error it returns is retried unless it is a refusal.
func (l *Lock) createFailed(err error, parentsMade, mayExist *bool) error {
	switch {
	case errors.Is(err, zk.ErrNoNode) && !*parentsMade:
		*parentsMade = true
		if err := l.ensureParents(); err != nil {
			return err
		}
		return errParentsMade // retried like a lost connection
	case session.Refusal(err):
		return err
	}
	*mayExist = true
	return err
}

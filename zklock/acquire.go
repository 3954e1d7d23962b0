package zklock

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/session"
)

// An acquisition, top to bottom: acquire claims the lock for the call
// (begin), acquireNode queues a node until one leads, each attempt in
// four stages: our node created with the queue listed behind it
// (enqueue, create.go), its turn waited for (waitTurn, wait.go), the hold
// granted by the session floor (Floor.Grant) and published
// (Hold.publish, holdwatch.go). A wait that ends without the lock is
// explained (explain, holder.go).

// Acquire waits until the lock is held, ctx ends, Close is called, or an
// error that retrying cannot mend occurs, and returns the hold. Connection
// losses, failed writes and session expiries while queueing are retried.
//
// When ctx ends, Acquire returns a little after: once the wait has seen it
// and queued the delete of our node, and, when the wait does not know the
// holder to be current, after one read that names the holder in the
// WaitError (bounded by a quarter of the wait, between 50 ms and 1 s, when
// the server does not answer). When it returns an error, the delete of the
// node it queued (if any) is under way, not awaited: it is sent in the
// background and guaranteed, retried whatever it meets until the node is
// gone or its session is over (without a connection, it goes once the
// connection is back, or with the session). A listing made right after the
// return may still show the node. zkcompat's TestLockContextDeadline
// measures both through the drop-in, whose waits end here (docs/interop.md
// gives the figures).
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

// begin claims the lock for one call, rejecting misuse.
func (l *Lock) begin(ctx context.Context) error {
	if l == nil {
		return errNil("Lock")
	}
	if ctx == nil {
		return ErrNilContext
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return ErrClosed
	case l.f.Closed():
		return l.f.ClosedErr()
	case l.busy:
		return ErrBusy
	case l.hold != nil && !l.hold.isLost():
		return ErrAlreadyHeld
	}
	l.busy = true
	return nil
}

func (l *Lock) end() {
	l.mu.Lock()
	l.busy, l.abort = false, nil
	l.mu.Unlock()
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
		// published before it looked (attach checks closed under mu, and
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
// then has the session grant the hold, and publishes it. It returns the hold, nil when !wait
// and the lock is taken, or an error; on an error no node of ours stays
// queued.
func (l *Lock) attempt(ctx context.Context, wait bool) (*Hold, error) {
	f := l.f
	f.Waiting(1)
	defer f.Waiting(-1)
	l.view.queued("") // what an earlier node saw says nothing of this one's queue
	// The create is admitted once the session's credentials are in place
	// (WithDigestAuth; Flight.Admit): a create under an ACL that only they
	// satisfy would be refused, or made anonymous.
	n, err := l.enqueue(ctx, wait)
	if errors.Is(err, errBusyDelete) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if mutant.On(mutant.GrantBeforeListing) {
		l.leadAtOnce(&n) // seeded bug: leads without the listing's answer
	}
	token, leads, err := l.waitTurn(ctx, &n, wait)
	if err == nil && leads {
		// The hold of our node, which leads, with its fencing token (see
		// waitTurn): the session floor grants it, and it is published.
		h := &Hold{f: f, path: l.path, node: n.node, owner: n.owner, token: token, onGone: l.onGone, lost: make(chan struct{}),
			lock: holdLock{attach: l.attach, leave: l.detach, tellLost: l.lost, tellRevoked: l.revoke}}
		h.m = session.NewMember(l.path, n.node, h.lose)
		if l.revocable {
			h.revoked = make(chan struct{})
		}
		err = f.Grant(ctx, n.owner, h.m)
		if mutant.On(mutant.GrantLate) && err == nil {
			time.Sleep(200 * time.Millisecond) // seeded bug: handed over long after the verdict
		}
		trace.Granted(f.Conn(), l.path, n.node, n.owner, token, err)
		if err == nil {
			return h, h.publish(l.revocable || l.watchNode)
		}
	}
	// Even a node found gone is deleted: should the finding be wrong, a
	// node left behind would block the queue for the session's life (the
	// delete ends at once if it is gone or its session is over).
	f.Writes().Delete(l.path, n.node, n.owner, nil)
	return nil, err
}

package tier

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// Guarded writes on the two-tier lock: zklock.Hold.Txn (a multi
// transaction the server applies only while the hold's node exists) plus
// the one check the server cannot make. Under WithHandoff consecutive
// local holders share one node, so a write of a hold already handed on
// would pass the server's check: it must be refused here, and a write of
// the hold that is still on the wire when the hold is handed on must be
// over before the next holder starts: the hold's txnGate (held.go).

type txnResult struct {
	res []zk.MultiResponse
	err error
}

// Txn runs ops as one ZooKeeper transaction on behalf of the hold held
// carries (held, or a context derived from it, such as one with a
// deadline): see zklock.Hold.Txn for the ops, the guard and the errors. It
// costs one multi request. Besides the server's check of the hold's node,
// it refuses a context whose hold is no longer this lock's current one
// (ErrNotHolder), which under WithHandoff is what tells a previous local
// holder from the next one, since both ride on the same node. A refusal of
// a stale hold (an error matching ErrLockLost, or ErrNotHolder for a
// context that carried a hold of this lock) is told to the observer as a
// TxnFailed event.
//
// Txn returns when the server answers or held ends. When held ends first
// (a deadline, or the hold's loss or release) the result is
// ErrOutcomeUnknown: the request may be applied yet, and a hand-off to the
// next local holder waits until it is over.
func (l *Lock) Txn(held context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if l == nil {
		return nil, errNil("Lock")
	}
	if held == nil {
		return nil, ErrNilContext
	}
	res, err := l.txn(held, ops)
	if err != nil && l.staleRefusal(held, err) {
		l.obs.observe(Event{Kind: TxnFailed, Err: err})
	}
	return res, err
}

func (l *Lock) txn(held context.Context, ops []any) ([]zk.MultiResponse, error) {
	h := l.holdOf(held)
	switch {
	case h == nil && l.life.isClosed() && held.Value(holdKey{l}) != nil:
		return nil, ErrClosed
	case h == nil && held.Value(holdKey{l}) != nil:
		return nil, fmt.Errorf("%w: the context's hold of %s has ended", ErrNotHolder, l.Path())
	case h == nil:
		return nil, ErrNotHolder
	case h.ctx.Err() != nil:
		// The hold was lost: its cause wraps ErrLockLost. (A release
		// makes the hold not current before it cancels h.ctx.)
		return nil, context.Cause(h.ctx)
	}
	if err := held.Err(); err != nil {
		return nil, err // held is derived from h.ctx and ended on its own
	}
	if !h.txns.begin() {
		return nil, fmt.Errorf("%w: the context's hold of %s has ended", ErrNotHolder, l.Path())
	}
	done := make(chan txnResult, 1)
	go func() {
		defer h.txns.done()
		// Not held: the request, once sent, cannot be withdrawn, and its
		// end, not the caller's, is what the gate must see.
		// On h's ZooKeeper hold only: should this goroutine run after
		// that hold was released and another acquired, zklock refuses it.
		res, err := h.zk.Txn(context.WithoutCancel(held), ops...)
		if errors.Is(err, zklock.ErrNotHeld) {
			err = fmt.Errorf("%w: the context's hold of %s has ended", ErrNotHolder, l.Path())
		}
		done <- txnResult{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-held.Done():
		err := fmt.Errorf("%w: %w", ErrOutcomeUnknown, held.Err())
		if cause := context.Cause(held); cause != held.Err() {
			// Said, not wrapped: an unknown outcome must not match
			// ErrLockLost, which promises that nothing was applied.
			err = fmt.Errorf("%w (%v)", err, cause)
		}
		return nil, err
	}
}

// staleRefusal reports whether err refused a guarded write because the
// hold held carries (or carried) is stale.
func (l *Lock) staleRefusal(held context.Context, err error) bool {
	if errors.Is(err, ErrLockLost) {
		return true
	}
	return errors.Is(err, ErrNotHolder) && held.Value(holdKey{l}) != nil
}

// Txn is Lock.Txn for a hold of this registry.
func (r *Registry) Txn(held context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if r == nil {
		return nil, errNil("Registry")
	}
	if held == nil {
		return nil, ErrNilContext
	}
	e, err := r.r.entryOf(held)
	if err != nil {
		return nil, err
	}
	return e.v.Txn(held, ops...)
}

package zklock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// Guarded writes: a ZooKeeper transaction that the server applies only
// while the hold it runs for still stands.
//
// The guard is one op put in front of the caller's: a check of the
// holder's own lock node with version -1, which the server reads as "this
// node exists" (PrepRequestProcessor skips the version comparison for -1).
// A multi is all or nothing, so the caller's ops land only if the node
// exists when the leader applies the transaction. Why existence is enough:
//
//   - The node is ephemeral and sequential. Its name carries a sequence
//     number the parent issues once, so no later node, ours or anyone
//     else's, can ever have this path: if a node of this path exists, it
//     is the node this hold was granted on.
//   - While it exists, no other contender can be granted the lock: every
//     contender created later has a higher sequence and waits for it, and
//     every contender created earlier was gone when we were granted.
//   - It stops existing when the hold ends at the server, whichever way:
//     our release's delete, the session's expiry or close (the server
//     deletes a session's ephemeral nodes in the closeSession transaction,
//     ordered in the log before any grant that follows it), or a deletion
//     by someone else. The check is evaluated in the leader's log order,
//     so a transaction ordered after any of these fails its check.
//
// So the check covers exactly what the client cannot see for itself: a
// holder paused past its session timeout (GC, SIGSTOP), partitioned, or
// running on a stale view is refused by the server, not by its own belief.
//
// The version is -1 on purpose. A revocation request is a data write on
// the holder's node ("__REVOKE__"), which bumps the node's version without
// ending the hold: checking the version seen at grant would refuse every
// guarded write of a holder that was asked to let go but has not yet, and
// that holder still holds the lock. Existence is the property that says
// who holds; the version says nothing about it.
//
// What it does not cover: a write to anything outside ZooKeeper (the
// resource must check the fencing token itself; see package fence), and
// ops that need no guard (the caller's own reads, made outside the
// transaction, may be stale).

// testSkipLostCheck makes Txn send even when the hold is known lost, so
// that tests can make a hold stale at the server and see the server's
// verdict rather than the client's (see export_test.go).
var testSkipLostCheck atomic.Bool

// Txn applies ops, a ZooKeeper multi transaction of *zk.CreateRequest,
// *zk.SetDataRequest, *zk.DeleteRequest and *zk.CheckVersionRequest, on
// behalf of the hold: all of them, or, if the hold has ended at the server
// or any op fails, none. It costs one multi request (one write round
// trip), the guard included. The responses are those of ops, in order.
// With no ops it confirms the hold at the server.
//
// Errors, by what they say of the transaction:
//   - applied: nil.
//   - not sent: ErrNil (a nil hold), ErrNilContext, ErrInvalidOp,
//     ErrSessionClosed, ErrNotHeld (the hold was released), the hold's loss
//     error (wrapping ErrLockLost) when it is known lost, and ctx's error
//     when it ended before sending.
//   - refused by the server, nothing applied: ErrStaleHold (also matching
//     ErrLockLost; the hold is then ended with ErrNodeDeleted) when the
//     hold's node is gone; an *OpError wrapping the server's error when
//     one of ops failed (the responses are returned with it).
//   - unknown: ErrOutcomeUnknown, wrapping the cause (a lost connection, or
//     ctx's error when ctx ended while the request was out).
//
// What the caller is told is true; this is the contract of every
// transaction of the session's writer (Session.Txn too):
//   - "not applied" (every error above but ErrOutcomeUnknown) is final:
//     the transaction is not applied, then or later. A ctx that ends
//     before the transaction's request is sealed (while it is queued,
//     waits with its round for the lease's sync, or is back in the queue
//     after its batch was refused at another write's op) takes it back:
//     Txn returns ctx's error alone.
//   - ErrOutcomeUnknown: applied at most once, and never sent again,
//     whatever its batch meets. Txn returns it only once the request is on
//     the wire (under NewSession, whose writes the session cannot see, once
//     its answer is in), so that a request the caller sends next on the
//     session, a read-back, is answered after it: read back, then decide.
//     That order holds on one connection: ZooKeeper orders nothing between
//     a request sent on a connection that was then lost and a read on the
//     next one, so an unknown outcome from a lost connection, or a
//     read-back that met a lost connection, is still unknown.
//
// Txn may run concurrently with the hold's other Txn calls; one that races
// Release is ordered at the server before or after the release's delete.
// docs/guarded-writes.md names the test of each promise.
func (h *Hold) Txn(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if h == nil {
		return nil, errNil("Hold")
	}
	if ctx == nil {
		return nil, ErrNilContext
	}
	if err := validateOps(ops); err != nil {
		return nil, err
	}
	if err := h.txnable(); err != nil {
		return nil, err
	}
	for i, op := range ops {
		// Writing the hold's node would end or disguise the hold behind
		// the guard's back; checking it (a revocation-aware version check,
		// say) is fine.
		if _, check := op.(*zk.CheckVersionRequest); !check && writes.OpPath(op) == h.node {
			return nil, fmt.Errorf("%w: op %d writes the hold's own node %s", ErrInvalidOp, i, h.node)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	multi := make([]any, 0, len(ops)+1)
	multi = append(multi, &zk.CheckVersionRequest{Path: h.node, Version: -1})
	multi = append(multi, ops...)
	// Sent by the session's writer with its other waiting writes (package writes),
	// which give it its own results when another op of the multi fails it;
	// exempt from the bound on requests in flight, like a delete: it serves
	// a hold, which must not wait behind the acquisitions queued on the
	// session.
	w := h.f.Writes().Txn(multi)
	r := h.f.Writes().Await(ctx, w)
	if r.Verdict == writes.Refused && r.Op == 0 {
		return nil, h.guardRefused(r.Err)
	}
	return txnResult(r, ops, 1)
}

// txnable reports why the hold cannot run a Txn, if it cannot: judged at
// this moment (judge), a hold whose lease ran out sends nothing.
func (h *Hold) txnable() error {
	h.judge()
	switch {
	case h.f.Closed():
		return h.f.ClosedErr()
	case h.released.Load():
		return ErrNotHeld
	case h.isLost() && !testSkipLostCheck.Load():
		return fmt.Errorf("%w: %w", ErrLockLost, h.cause)
	}
	return nil
}

// guardRefused is the error of a transaction whose guard the server
// refused: the hold's node is gone (the server says the hold is over: it
// ends here too, so that Lost and the loss handler tell the holder now
// rather than when the own-node watch or the lease catches up), or
// something else refused the check.
func (h *Hold) guardRefused(err error) error {
	if errors.Is(err, zk.ErrNoNode) {
		h.lose(ErrNodeDeleted)
		return fmt.Errorf("%w (%w): node %s is gone", ErrStaleHold, ErrLockLost, h.node)
	}
	return fmt.Errorf("zklock: transaction guard on %s refused: %w", h.node, err)
}

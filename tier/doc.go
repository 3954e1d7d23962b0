// Package tier is the lock users hold: a two-tier, reentrant lock in the
// style of agapple's DistributedReentrantLock.
//
// Tier 1 is an admission queue in the process: a FIFO that
// serializes the goroutines, so that every wait can be abandoned through a
// context.Context and a try never blocks. Tier 2 is a [zklock.Lock]: the
// gate's holder competes for the lock across processes through a single
// ZooKeeper node, so a process puts at most one znode and one watch on
// ZooKeeper per lock, whatever its goroutine count.
//
// Acquire returns a context that carries the hold. Acquiring again with that
// context re-enters (a count, no ZooKeeper request); each Acquire is matched
// by one Release with the held context. The held context is cancelled when
// the lock is lost (session expired or disconnected, node deleted), so work
// under the lock sees ctx.Done().
//
// Release undoes the tiers in reverse order: the ZooKeeper node first, then
// the gate, so a busy process cannot pass the gate from goroutine to
// goroutine while other processes starve. [WithHandoff] is the one
// sanctioned exception: within a bound on consecutive hand-offs and on time,
// the last Release passes the hold, node and all, to the next local waiter.
//
// With [WithRevocable] a holder can be asked to release (Curator's
// revocation, [zklock.RevokeHolder]): [Lock.Revoked] tells it, and it
// decides; the held context is not cancelled.
//
// [Registry] gives one lock per key below a root path, shared by all callers
// in the process: it owns a reference count per key, so a key's lock exists
// only while it is acquired or held. A Lock knows nothing of registries.
//
// [Lock.Txn] writes to ZooKeeper on behalf of a hold: the server applies
// the transaction only while the hold's node exists, and tier refuses a
// context whose hold is no longer the current one (under WithHandoff the
// next local holder shares the node, so the server could not tell).
//
// An acquisition whose wait ends without the lock (its context, a Close)
// returns a [WaitError]: the lock (and the registry's key), the tier it
// spent its time in, and who held it with its owner, whichever goroutine
// of the process asks; during an outage, since when ZooKeeper has been out
// of reach (it then matches [ErrDisconnected]).
//
// Errors are values to test with errors.Is. A tier caller never needs to
// import zklock for that: every zklock error a tier call can return, or
// that can end a hold (the cause of a held context wraps [ErrLockLost] and
// one of [ErrDisconnected], [ErrLeaseExpired], [ErrSessionExpired],
// [ErrNodeDeleted], [ErrSessionClosed]), is re-exported here as the same
// value; the rule is stated at [ErrLockLost]'s group. A method on a nil
// pointer of this package's types returns an error naming it, which
// matches [ErrNil].
//
// Depends on package zklock (and so on go-zookeeper and mutexbool).
package tier

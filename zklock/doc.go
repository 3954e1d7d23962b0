// Package zklock is tier 2 of tierlock: a process-level mutual-exclusion
// lock on ZooKeeper, one ephemeral-sequential znode per acquisition.
//
// # The recipe
//
// Acquiring creates <path>/_c_<uuid>-lock-<seq> (Curator's protected name,
// so Curator and go-zookeeper's zk.Lock processes can share a path)
// and lists the children. The node with the lowest sequence number holds
// the lock. Every other node watches only its immediate predecessor with a
// data watch (no herd effect, no watch left behind on a missing node); the
// watch callback re-runs the check and sets a [mutexbool.BooleanMutex] that
// the blocking Acquire waits on, and a bounded periodic re-check covers a
// watch lost to a server restart. Waiters are served in the order they
// queued on the server.
//
// # Sessions and loss
//
// A [Session] owns the ZooKeeper connection and the state of its session,
// taken from go-zookeeper's event callback (which never drops an event),
// not from its event channel (which does). The invariant: under the
// default policy a holder is told of a possible loss before any other
// process can be granted the lock, whatever the fault. Seeing the client's
// own disconnection is not enough for that (a follower cut off from the
// leader keeps answering pings; an asymmetric partition or a blocked write
// hides the loss from the client), so while a lock has a node the session
// confirms itself with the leader by a sync every eighth of the session
// timeout, and holds end when no sync has succeeded for a quarter of it
// ([ErrLeaseExpired]); the argument is in lease.go. A disconnection, an
// expiry, a new session id, a dropped own-node watch or the node's deletion
// end holds at once. [WithLossOnExpiryOnly] keeps holds through short
// disconnections, with a bounded overlap. A lost hold closes [Lock.Lost]
// and calls the [WithLossHandler] function synchronously. A process paused
// longer than its session timeout can still believe it holds the lock; the
// fencing token ([Lock.Token], a zxid no lower than the lock node's
// creation zxid, increasing across successive holders) lets a guarded
// resource reject such a stale holder (package fence is that resource's
// side), and [Lock.Txn] has the server itself reject a stale holder's
// ZooKeeper writes: its transaction carries a check of the hold's node.
//
// Errors are classified by meaning: only the server's refusals (no such
// node, no permission, ...) are final; every error that leaves a request's
// fate open (lost connections, failed socket writes, an expired session) is
// retried, and deletes of our nodes are retried whatever the error until
// the node or its session is gone.
//
// # Access control
//
// [WithDigestAuth] authenticates the session (before its first lock
// request, and on every reconnect) and [WithACL] sets the ACL of the lock
// nodes and of the lock paths the lock creates. ZooKeeper checks a create
// or delete against the parent's ACL, so the fleet's identity with every
// permission and the world with READ only, on the lock path, keeps a
// client without the credentials from deleting a holder's node or queueing
// a node of its own, while it can still list the queue.
//
// # Cost
//
// On a session made by [Connect], requests are pipelined, which is safe
// because ZooKeeper applies one session's requests in the order sent. The
// create and the children listing of an acquisition go out back to back,
// so the listing sees the new node and an uncontended acquisition costs one
// write round trip; the fencing token comes from that listing, not from an
// extra read. Release does not wait for its delete: when the session
// acquires the path again at once, the delete and the new create travel as
// one multi transaction (one log write on the server instead of two).
//
// A Lock serves one holder at a time and is not reentrant: concurrent use by
// racing goroutines returns [ErrBusy] rather than corrupting state. Package
// tier puts a reentrant, cancellable gate in front of it for that.
//
// Errors are values to test with errors.Is. A lost hold's error wraps
// [ErrLockLost] and its cause; a method on a nil *Lock returns
// [ErrNilLock] (which also matches [ErrNilSession]). Package tier
// re-exports every error of this package that its callers can receive.
//
// # Layout
//
// One file per stage: session.go (Session, Connect, NewSession, Close),
// state.go (state from the event callback, holds ended on a possible loss),
// notify.go (the user's state listener, off the tracking path), lease.go
// (the sync lease: loss before grant), lock.go (Lock, Acquire, TryAcquire,
// Release), queue.go (enqueue, protection mode, parents, abandon),
// rule.go (who may go, whom to watch), wait.go (the waiter and its
// BooleanMutex), hold.go (install, the own-node watch, loss),
// participants.go (ListParticipants: a queue as an operator sees it),
// guard.go (Txn: writes guarded by a check of the hold's node), revoke.go
// (cooperative revocation, Curator's protocol: [WithRevocable],
// [RevokeNode], [RevokeHolder]), auth.go (digest credentials before the
// first lock request), retry.go (error classes, retry, guaranteed delete),
// pipeline.go (pending deletes, send), wire.go (the tap on go-zookeeper's
// connection), node.go (names, contenders of every family, ordering).
//
// Depends on github.com/go-zookeeper/zk, github.com/cenkalti/backoff/v4 and
// package mutexbool.
package zklock

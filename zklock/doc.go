// Package zklock is tier 2 of tierlock: a process-level mutual-exclusion
// lock on ZooKeeper, one ephemeral-sequential znode per acquisition.
//
// A [Session] owns the connection ([Connect], or [NewSession] over a
// go-zookeeper connection of the caller's). A [Lock] on a path serves one
// holder at a time: [Lock.Acquire] returns a [Hold], which carries the
// node, its fencing token ([Hold.Token]), its loss ([Hold.Lost],
// [Hold.Err]) and its end ([Hold.Release]). Package tier puts a
// reentrant, cancellable gate in front, so that a process's goroutines
// share one node.
//
// # The recipe
//
// Acquiring creates <path>/_c_<uuid>-lock-<seq> (Curator's protected name,
// so Curator, kazoo and go-zookeeper's zk.Lock processes share a path) and
// lists the children. The lowest sequence holds. Every other node watches
// only its predecessor, with a data watch; the watch's callback sets a
// mutexbool.BooleanMutex that the blocking Acquire waits on, beside a
// periodic re-check for a watch lost to a server restart. Waiters are
// served in the order they queued.
//
// # Loss
//
// Under the default policy a holder is told of a possible loss before any
// other process can be granted the lock, whatever the fault: the session
// shows itself that the ensemble's leader heard of it (a connect answer,
// or a chain of its writes and syncs around one of the leader's pings of
// the follower it talks to), and holds end seven eighths of the session
// timeout after the latest moment so shown ([ErrLeaseExpired]), before
// the leader can expire the session; a disconnection, an expiry or a new
// session id ends them at once. The argument assumes ZooKeeper's default
// negotiation (a session of at least two server ticks), or a tick told by
// [WithServerTickTime]. [WithLossOnExpiryOnly]
// keeps holds through short disconnections, with a bounded overlap. A
// process paused past its session can still believe it holds: the fencing
// token lets a resource reject it (package fence), and [Hold.Txn] has the
// server itself refuse a stale holder's ZooKeeper writes.
//
// # Cost
//
// Requests are pipelined on a session made by Connect: an acquisition's
// listing goes out right behind its create, a release's delete rides the
// session's next create as one multi transaction, and the writes show
// the leader hears of the session, so an uncontended acquisition costs one
// write round trip and a busy session sends no sync (a first acquisition
// after a quiet spell costs one sync more). The own-node watch (which notices an
// operator deleting a holder's node, and revocation) is set only for
// revocable holds and for holds that last.
//
// # Errors
//
// Errors are values to test with errors.Is. Only the server's refusals
// are final; an error that leaves a request's fate open is retried, and
// deletes of our nodes are retried until the node or its session is gone.
// A lost hold's error wraps [ErrLockLost] and its cause. A method on a nil
// pointer returns an error matching [ErrNil]. Package tier re-exports the
// errors its callers can receive.
//
// The design, file by file, is in the repository's docs/design.md.
package zklock

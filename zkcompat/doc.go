// Package zkcompat is a drop-in for go-zookeeper's zk.Lock built on
// tierlock's two tiers. Code that gives each goroutine its own zk.Lock
// changes an import, a constructor and its connect:
//
//	conn, _, err := zk.Connect(servers, 10*time.Second)                 // before
//	conn, _, err := zkcompat.Connect(servers, 10*time.Second)           // after
//	l := zk.NewLock(conn, "/locks/job-42", zk.WorldACL(zk.PermAll))      // before
//	l := zkcompat.NewLock(conn, "/locks/job-42", zk.WorldACL(zk.PermAll)) // after
//
// and keeps calling Lock and Unlock. Underneath, all the handles of a
// process on one path and connection share one [tier.Lock] on one
// [zklock.Session] for that connection: the process puts at most one znode
// and one watch on ZooKeeper per path, however many goroutines wait, where
// zk.Lock puts one of each per waiting goroutine. A path's tier.Lock is
// reference-counted: it is closed when no handle is locking or holding it.
// A connection's session is made by its first NewLock and lives as long as
// the connection: it ends when the connection is closed, or by
// [CloseConn], never for being idle. Idle, it keeps its lease with a few
// syncs a session timeout (TestIdleSessionSyncsEveryIdlePeriod), so a Lock
// after any quiet spell is granted on its create's answer, as zk.Lock's
// is (TestLockAfterIdle times one after a spell: see docs/interop.md). So
// is the first Lock on a connection of [Connect]'s, whose session sees
// the connection's handshake (TestConnectFirstLockOnItsHandshake); on a
// connection of zk.Connect's, the first Lock waits for the session's first
// lease, 5/8 of the servers' tick (TestFirstLockWaitsForTheLease).
//
// Kept from zk.Lock, where callers depend on it: its errors. Wherever
// zk.Lock returns one of go-zookeeper's error values, the drop-in returns
// that value itself, so that err == zk.ErrNoNode holds as it did
// (TestErrorsAreZkLocks runs both on every case): Lock on a handle that
// holds (or is acquiring) returns zk.ErrDeadlock; Unlock without a hold
// zk.ErrNotLocked; an empty ACL zk.ErrInvalidACL; an invalid path (one
// zklock.ValidatePath refuses) zk.ErrInvalidPath; a closed connection
// zk.ErrConnectionClosed; a request's error from go-zookeeper or the
// server (zk.ErrNoAuth, ...) that error. Errors zk.Lock cannot return (a
// hold's loss, CloseConn, a cancelled LockContext) are tier's and zklock's,
// wrapped. A handle can be locked again after Unlock. Node names are Curator's
// (_c_<uuid>-lock-<seq>), which zk.Lock parses like its own, so processes
// still on zk.Lock and processes on zkcompat exclude each other on one path.
//
// Kept too, the lock path: when Lock creates it, it is a persistent node
// with the handle's ACL, as zk.Lock makes it, and the data a caller keeps
// on it stays after Unlock (TestLockPathKeptAsZkLockKeepsIt).
//
// Kept too, with no server to reach: Lock fails with zk.ErrNoServer when
// zk.Lock's would. go-zookeeper fails the requests it
// has queued with zk.ErrNoServer each time it has tried every server in
// turn without connecting (then it pauses a second before the next round),
// so a zk.Lock whose create finds no session fails within about a second.
// A Lock called while the connection has no session sends a request of its
// own through it first (an exists of the path, which writes nothing), and
// fails so if go-zookeeper fails that request; answered, it goes on.
//
// Kept too, Unlock's wait: Unlock returns once the server has answered the
// delete of the node, as zk.Lock's does, so that a caller may delete the
// lock's path next (TestUnlockThenDeletePath). It returns zk.ErrNoNode
// when someone else deleted the node while it was held (or it went with
// its session), whether or not the hold had seen it go (Lost says so)
// (TestUnlockReportsNodeDeletedByAnother, TestLostAndToken), and nil after
// a clean hold however long it lasted (TestUnlockOfOldHold). The delete is
// the shared lock's own, one per Unlock, which the session sends with its
// next create in one multi (in a local hand-off, the next handle's), or at
// once when no other handle of the process is on the path: no delete finds
// its node gone and the server refuses no multi in a clean run
// (TestNoRefusedMulti), and a local hand-off costs fewer requests than
// zk.Lock's (TestRequestsBesideZkLock). It returns a failed delete's error:
// zk.ErrNoAuth when an ACL refuses it (TestUnlockReportsFailedDelete),
// zk.ErrConnectionClosed when the connection is lost before the answer,
// without waiting for it to come back (TestUnlockConnectionLost). The handle is unlocked all the same,
// where zk.Lock's stays locked for Unlock to be called again: the delete
// is retried in the background until the node or its session is gone,
// and the lock stays taken until then.
//
// Different, where zk.Lock's behaviour is a defect: a connection lost once
// Lock has reached a server (it was called with a session, or its request
// was answered) is retried with back-off instead of failing Lock and
// leaving a node behind, however long the outage (LockContext's context
// bounds the wait), where zk.Lock's Lock fails if it has a request out;
// a hold lost to session expiry is reported (Lost), and Unlock, which
// returns zk.ErrNoNode as zk.Lock's does, leaves the handle usable, where
// zk.Lock's stays locked and every later Lock returns ErrDeadlock; an
// Unlock whose delete succeeded after a loss the hold saw (a disconnection,
// under zklock's default policy) returns an error wrapping
// tier.ErrLockLost, where zk.Lock's, which cannot see the loss, returns
// nil. The
// missing parents of the path are created as container nodes (removed by
// the server once empty) rather than persistent ones. LockWithData cannot put the
// caller's data into a node that the process's handles share: the node
// carries tierlock's own (host and pid) and data is ignored.
//
// Added, at no cost to callers that ignore it: [Lock.LockContext] (a
// wait that its context ends, with an error that wraps the context's:
// errors.Is holds, == does not), [Lock.Lost] (closed when the hold is
// lost) and [Lock.Token] (a fencing token).
package zkcompat

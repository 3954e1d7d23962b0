package zklock

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/session"
	"github.com/tierlock/tierlock/zklock/internal/wire"
	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// Test seams over the wire tap of a session made by Connect.

// Request opcodes, for the hooks below.
const (
	OpCreate                = wire.OpCreate
	OpCreateContainer int32 = 19
	OpDelete                = wire.OpDelete
	OpExists          int32 = 3
	OpGetData               = wire.OpGetData
	OpSetData               = wire.OpSetData
	OpSync                  = wire.OpSync
	OpGetChildren2          = wire.OpGetChildren2
	OpMulti                 = wire.OpMulti
	OpAuth            int32 = 100
)

// SetWriteHook runs fn before every request s writes, with its bytes as
// the server will read them (a chroot's in its paths); a non-nil error
// fails that write as a failed socket write would (go-zookeeper gets the
// error, and the connection is closed). nil removes the hook.
func SetWriteHook(s *Session, fn func(op int32, b []byte) error) { session.TapOf(s.f).SetOnWrite(fn) }

// Written reports how many requests with opcode op s has written.
func Written(s *Session, op int32) int64 { return session.TapOf(s.f).Written(op) }

// SetPollEvery sets how often sessions made by NewSession poll their
// connection's state, and returns the function that restores it.
func SetPollEvery(d time.Duration) (restore func()) { return session.SetPollEvery(d) }

// SetTxnSkipLostCheck makes Hold.Txn send its transaction even when the
// hold is known lost, so that a test sees the server's verdict on a stale
// hold instead of the client's; it returns the function that restores it.
func SetTxnSkipLostCheck(on bool) (restore func()) {
	old := testSkipLostCheck.Swap(on)
	return func() { testSkipLostCheck.Store(old) }
}

// LatestTouch is when the latest packet s's tap has seen touched at the
// server was written (ok false: none yet).
func LatestTouch(s *Session) (time.Time, bool) {
	return session.TapOf(s.f).Touches().Before(time.Now())
}

// LeaseValid reports whether s's lease would let a hold be granted now.
func LeaseValid(s *Session) bool { return s.f.Lease().Valid() }

// RefreshLease sends a sync that proves s, and returns the channel closed
// once it is answered.
func RefreshLease(s *Session) <-chan struct{} { return s.f.Lease().Refresh() }

// LeaseLastK is the write time s's lease dates its latest proof by.
func LeaseLastK(s *Session) time.Time { return s.f.Lease().LastK() }

// SetAuthDelayForTest delays the sending of every session's credentials by
// d, and returns the function that restores it.
func SetAuthDelayForTest(d time.Duration) (restore func()) { return session.SetAuthDelay(d) }

// SetFoldWaitForTest sets how long the lone deletes of sessions connected
// from now on wait for a create to carry them, and returns the function
// that restores it.
func SetFoldWaitForTest(d time.Duration) (restore func()) { return session.SetFoldWait(d) }

// GrantedTimeout and ConnQuit expose conninfo.go's reads of go-zookeeper's
// unexported fields to TestConnInternals.
var (
	GrantedTimeout = session.GrantedTimeout
	ConnQuit       = session.ConnQuit
)

// HoldWriterForTest holds every session's writer before it sends its next
// batch until the returned function is called, so that a test can see
// what one batch gathers.
func HoldWriterForTest() (let func()) { return session.HoldWriters() }

// FillInflightForTest takes every free place in s's bound on requests in
// flight, as a burst of acquisitions would, and returns the function that
// gives them back.
func FillInflightForTest(s *Session) (giveBack func()) { return s.f.Flight().Fill() }

// SetListedBehindHookForTest sets the function run once the listing
// pipelined behind a create is answered, and returns the function that
// removes it.
func SetListedBehindHookForTest(fn func()) (remove func()) {
	testHookListedBehind.Store(&fn)
	return func() { testHookListedBehind.Store(nil) }
}

// SetHandedHookForTest sets the function run by every session's writer
// between handing a request to a connection it did not dial and sending
// it, and returns the function that removes it.
func SetHandedHookForTest(fn func()) (remove func()) { return session.SetHandedHook(fn) }

// SetCreatedHookForTest sets a function every acquisition runs between its
// create's answer and the read of the session that owns the node; nil
// removes it.
func SetCreatedHookForTest(fn func()) {
	if fn == nil {
		testHookCreated.Store(nil)
		return
	}
	testHookCreated.Store(&fn)
}

// SetBatchFromForTest sets how many requests of a session must be out for
// its writes to be queued for the flusher (0: always), and returns the
// function that restores it.
func SetBatchFromForTest(n int32) (restore func()) {
	return wire.SetBatchFrom(n)
}

// WriterIdleForTest reports whether s's writer has nothing queued and is
// not running, so that a gate set now (HoldWriterForTest) holds the next
// write's round.
func WriterIdleForTest(s *Session) bool { return s.f.Writes().Idle() }

// QueuedWritesForTest returns how many writes s's writer has queued and
// not yet taken into a batch.
func QueuedWritesForTest(s *Session) int {
	return s.f.Writes().Len()
}

// QueuedTxnsForTest returns how many transactions s's writer has queued
// and not yet taken into a batch.
func QueuedTxnsForTest(s *Session) int {
	return s.f.Writes().Count(writes.Txn)
}

// SetAcquiredHookForTest sets a function every acquisition runs once its
// node was granted and published, before Acquire returns; nil removes it.
func SetAcquiredHookForTest(fn func(*Lock)) {
	if fn == nil {
		testHookAcquired.Store(nil)
		return
	}
	testHookAcquired.Store(&fn)
}

// QueueDeleteForTest queues the delete of node, created by s's current
// session, as a release on the lock at path does.
func QueueDeleteForTest(s *Session, path, node string) {
	s.f.Writes().Delete(path, node, s.f.Conn().SessionID(), nil)
}

// OwnNodeDeletedForTest hands h's own-node watch a deletion of its node,
// as an event already on its way when giveUp removed the watch comes.
func OwnNodeDeletedForTest(h *Hold) {
	h.onOwnEvent(zk.Event{Type: zk.EventNodeDeleted, Path: h.node})
}

// OwnWatchArmedForTest reports whether h's own-node watch is armed: its
// read answered and its callback kept (a watch the server holds may still
// have its read out).
func OwnWatchArmedForTest(h *Hold) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unwatch != nil
}

// SetApplyHook runs fn as every session applies a connection state: before
// the state is applied (taken false), and after it ended holds, before
// their losses are told (taken true). It returns the function that removes
// it.
func SetApplyHook(fn func(taken bool)) (remove func()) { return session.SetApplyHook(fn) }

// SetRetryPauseHook makes fn run before each pause of the sessions'
// retries, with the error that asked for it, until restore is called.
func SetRetryPauseHook(fn func(err error)) (restore func()) { return session.SetPauseHook(fn) }

// Listing is a path's listing as a multiRead read it (wire.Listing).
type Listing = wire.Listing

// ErrCallLost and ErrNotConnected are the wire tap's Call errors.
var (
	ErrCallLost     = wire.ErrCallLost
	ErrNotConnected = wire.ErrNotConnected
)

// OpMultiRead is ZooKeeper's multiRead opcode.
const OpMultiRead = wire.OpMultiRead

// ListAll lists paths in one multiRead request on s's connection (the
// wire tap's own request, wire.Tap.Call).
func ListAll(ctx context.Context, s *Session, paths []string) ([]Listing, error) {
	r, err := session.TapOf(s.f).Call(ctx, wire.OpMultiRead, wire.AppendListings(nil, paths))
	if err != nil {
		return nil, err
	}
	return wire.ParseListings(r, len(paths))
}

// SetListSenderHook sets fn to run as any session's lister starts sending
// its listings, and returns the function that removes it.
func SetListSenderHook(fn func()) (remove func()) { return session.SetSenderHook(fn) }

// ListingsWaiting reports how many of s's listings wait to be sent.
func ListingsWaiting(s *Session) int { return session.ListingsWaiting(s.f) }

// IsListing reports whether a request of opcode op lists a lock's queue:
// go-zookeeper's getChildren2, or the session's multiRead of listings.
func IsListing(op int32) bool { return op == OpGetChildren2 || op == OpMultiRead }

// Listings counts the requests s wrote that list queues (IsListing).
func Listings(s *Session) int64 { return Written(s, OpGetChildren2) + Written(s, OpMultiRead) }

// OpSetWatches is ZooKeeper's setWatches opcode.
const OpSetWatches = wire.OpSetWatches

// IsWatch reports whether a request of opcode op sets a waiter's watch on
// a node: go-zookeeper's getData (GetW), or the session's setWatches.
func IsWatch(op int32) bool { return op == OpGetData || op == OpSetWatches }

// SetOwnAlone makes a lone read with a watch go as the session's own
// (setWatches and multiRead), not GetW, until restore is called.
func SetOwnAlone() (restore func()) { return session.SetOwnAlone() }

// WatchRequests counts the requests s wrote that set watches (IsWatch).
func WatchRequests(s *Session) int64 { return Written(s, OpGetData) + Written(s, OpSetWatches) }

// WatchNode reads node on s with a data watch, as a waiter does: fn
// told its event (Floor.Watch registers it before the read). It returns
// the function that removes fn.
func WatchNode(ctx context.Context, s *Session, node string, fn func(zk.Event)) ([]byte, *zk.Stat, func(), error) {
	if err := s.f.Flight().Admit(ctx, 1); err != nil {
		return nil, nil, func() {}, err
	}
	r, err := s.f.Watch(ctx, node, true, fn)
	return r.Data, r.Stat, r.Unwatch, err
}

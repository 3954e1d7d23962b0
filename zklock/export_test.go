package zklock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/session"
	"github.com/tierlock/tierlock/zklock/internal/wire"
	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// The session floor's test seam (session.Hooks): a session made with
// WithTestHooks (the tests' connect adds it) runs the hooks the functions
// below set, for every such session at once, and shows what a test may
// reach below its verbs (session.Inside): its wire tap (under Connect and
// Dial), its lease's refresh and latest proof, its lister's queue.

// testHooks is what the functions below set.
var testHooks struct {
	pollEvery, foldWait, authDelay atomic.Int64 // time.Duration, read as a session is made
	writerGate                     atomic.Pointer[chan struct{}]
	applying                       atomic.Pointer[func(taken bool)]
	handed, sending                atomic.Pointer[func()]
	paused                         atomic.Pointer[func(error)]
	ownAlone                       atomic.Bool
}

// WithTestHooks makes a session with the floor's test seam: the hooks set
// below run in it, and the seams that read a session (Written,
// SetWriteHook, ListingsWaiting...) can read it.
func WithTestHooks() SessionOption {
	return func(c *sessionConfig) {
		c.Hooks = &session.Hooks{
			Inside:    new(session.Inside),
			PollEvery: time.Duration(testHooks.pollEvery.Load()),
			FoldWait:  time.Duration(testHooks.foldWait.Load()),
			AuthDelay: time.Duration(testHooks.authDelay.Load()),
			WriterGate: func(done <-chan struct{}) {
				if gate := testHooks.writerGate.Load(); gate != nil {
					select {
					case <-*gate:
					case <-done:
					}
				}
			},
			Handed:   func() { run(&testHooks.handed) },
			Sending:  func() { run(&testHooks.sending) },
			OwnAlone: testHooks.ownAlone.Load,
			Applying: func(taken bool) {
				if fn := testHooks.applying.Load(); fn != nil {
					(*fn)(taken)
				}
			},
			Paused: func(err error) {
				if fn := testHooks.paused.Load(); fn != nil {
					(*fn)(err)
				}
			},
		}
	}
}

// run runs the hook that fn holds, if any.
func run(fn *atomic.Pointer[func()]) {
	if f := fn.Load(); f != nil {
		(*f)()
	}
}

// set sets hook to fn, and returns the function that removes it.
func set[F any](hook *atomic.Pointer[F], fn F) (remove func()) {
	hook.Store(&fn)
	return func() { hook.Store(nil) }
}

// setDuration sets d, and returns the function that restores it.
func setDuration(d *atomic.Int64, to time.Duration) (restore func()) {
	old := d.Swap(int64(to))
	return func() { d.Store(old) }
}

// inside is what a test may reach below s's floor: s must have been made
// WithTestHooks.
func inside(s *Session) *session.Inside {
	h := s.f.Config().Hooks
	if h == nil || h.Inside == nil {
		panic("zklock: a test seam asked of a session made without WithTestHooks")
	}
	return h.Inside
}

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
func SetWriteHook(s *Session, fn func(op int32, b []byte) error) { inside(s).Tap.SetOnWrite(fn) }

// Written reports how many requests with opcode op s has written.
func Written(s *Session, op int32) int64 { return inside(s).Tap.Written(op) }

// SetPollEvery sets how often sessions made by NewSession from now on
// poll their connection's state, and returns the function that restores
// it.
func SetPollEvery(d time.Duration) (restore func()) { return setDuration(&testHooks.pollEvery, d) }

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
	return inside(s).Tap.Touches().Before(time.Now())
}

// RefreshLease sends a sync that proves s, and returns the channel closed
// once it is answered.
func RefreshLease(s *Session) <-chan struct{} { return inside(s).Refresh() }

// LeaseLastK is the write time s's lease dates its latest proof by.
func LeaseLastK(s *Session) time.Time { return inside(s).LastK() }

// SetAuthDelayForTest delays the sending of the credentials of every
// session made from now on by d, and returns the function that restores
// it.
func SetAuthDelayForTest(d time.Duration) (restore func()) {
	return setDuration(&testHooks.authDelay, d)
}

// SetFoldWaitForTest sets how long the lone deletes of sessions connected
// from now on wait for a create to carry them, and returns the function
// that restores it.
func SetFoldWaitForTest(d time.Duration) (restore func()) {
	return setDuration(&testHooks.foldWait, d)
}

// GrantedTimeout and ConnQuit are the session floor's reads of
// go-zookeeper's unexported fields, for TestConnInternals.
var (
	GrantedTimeout = session.GrantedTimeout
	ConnQuit       = session.ConnQuit
)

// HoldWriterForTest holds every session's writer before it sends its next
// batch until the returned function is called, so that a test can see
// what one batch gathers.
func HoldWriterForTest() (let func()) {
	gate := make(chan struct{})
	old := testHooks.writerGate.Swap(&gate)
	var once sync.Once
	return func() {
		once.Do(func() {
			testHooks.writerGate.Store(old)
			close(gate)
		})
	}
}

// FillInflightForTest takes every free place in s's bound on requests in
// flight, as a burst of acquisitions would (Admit, with a ctx already
// ended: a free place is taken, none waited for), and returns the function
// that gives them back.
func FillInflightForTest(s *Session) (giveBack func()) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	for s.f.Flight().Admit(ended, 1) == nil {
		n++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for range n {
				s.f.Flight().GiveBack()
			}
		})
	}
}

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
func SetHandedHookForTest(fn func()) (remove func()) { return set(&testHooks.handed, fn) }

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
func SetApplyHook(fn func(taken bool)) (remove func()) { return set(&testHooks.applying, fn) }

// SetRetryPauseHook makes fn run before each pause of the sessions'
// retries, with the error that asked for it, until restore is called.
func SetRetryPauseHook(fn func(err error)) (restore func()) { return set(&testHooks.paused, fn) }

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
	r, err := inside(s).Tap.Call(ctx, wire.OpMultiRead, wire.AppendListings(nil, paths))
	if err != nil {
		return nil, err
	}
	return wire.ParseListings(r, len(paths))
}

// SetListSenderHook sets fn to run as any session's lister starts sending
// its listings, and returns the function that removes it.
func SetListSenderHook(fn func()) (remove func()) { return set(&testHooks.sending, fn) }

// ListingsWaiting reports how many of s's listings wait to be sent.
func ListingsWaiting(s *Session) int { return inside(s).Listings() }

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
func SetOwnAlone() (restore func()) {
	testHooks.ownAlone.Store(true)
	return func() { testHooks.ownAlone.Store(false) }
}

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

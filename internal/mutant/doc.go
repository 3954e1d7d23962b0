// Package mutant switches on seeded bugs in tierlock's code, so that a test
// can show that the history checks (package exclusion, and Porcupine through
// package linear) catch them: a checker that passes a broken lock proves
// nothing (docs/histories.md, "Seeded bugs").
//
// A seeded bug is one branch at its place in the code:
//
//	if mutant.On(mutant.GrantBeforeListing) {
//		...
//	}
//
// Bugs are compiled in only with the tierlockmutants build tag:
//
//	go test -C stress -tags tierlockmutants -run TestMutant .
//
// In such a build, a process started with TIERLOCK_MUTANT=name runs with
// that one bug (the variable is read once, at start; child processes
// inherit it). Without the tag, On is a constant false that the compiler
// inlines, and every branch goes with it: a normal build has no code of
// this package (`go tool nm` of the stress binary lists no symbol of it).
package mutant

// Env is the environment variable that names the bug a process runs with,
// in a build with the tierlockmutants tag.
const Env = "TIERLOCK_MUTANT"

// The seeded bugs.
const (
	// GrantBeforeListing: an acquisition takes its node to lead as soon as
	// the create succeeded, without the pipelined listing's answer
	// (zklock: listBehind, Lock.attempt).
	GrantBeforeListing = "grant-before-listing"
	// TouchFromAnswer: the touch a chain of proofs shows at the leader is
	// dated by when it was seen touched (a reply's arrival) instead of
	// when its packet was written (zklock/internal/session:
	// Lease.chainFrom).
	TouchFromAnswer = "touch-from-answer"
	// DeleteWrongCreate: the create carries the delete of the wrong node,
	// the queue's first once it is another session's (the holder, its
	// predecessor's delete applied), queued to the session's writer ahead
	// of the create (zklock: Lock.wrongDelete).
	DeleteWrongCreate = "delete-wrong-create"
	// WatchGrantsEarly: a waiter whose predecessor's watch fired goes on as
	// leading, without reading the queue again (zklock: Lock.waitTurn).
	WatchGrantsEarly = "watch-grants-early"
	// CreateBeforeDelete: the session's writer sends the creates of a batch
	// and leaves its deletes for the next one, so that a create goes out
	// while its path's released node's delete still waits (zklock's
	// write path: writes.Queue.takeLocked).
	CreateBeforeDelete = "create-before-delete"

	// The write path as it was before the fifth review (zklock's
	// internal/writes), each found by its explorer.

	// TxnUnknownRequeued: a transaction whose caller gave up once it was
	// sealed is not marked abandoned, so a batch refused for another
	// write's op sends it again after its caller was told the outcome is
	// unknown (writes.Queue.GiveUp; the review's item 1).
	TxnUnknownRequeued = "txn-unknown-requeued"
	// ApartStops: a refused batch's other writes go apart at once, each
	// alone, with no bound on the requests of a round, which stops at the
	// second write of a path (writes.Queue.takeApartLocked; item 6).
	ApartStops = "apart-stops"
	// UnknownBeforeWire: a write taken into a round cannot be taken back
	// before the round is sealed, and a caller who gives up is told the
	// outcome is unknown before the request is on the wire
	// (writes.Queue.GiveUp, Await; item 7).
	UnknownBeforeWire = "unknown-before-wire"

	// Bugs the history checks cannot see and the replay must
	// (internal/replay, docs/replay.md): a bound the code computes
	// wrongly, or a step the code takes later than the model takes it.

	// ReachLong: the lease reaches 5T/4 past the touch it counts from
	// instead of 7T/8 (zklock/internal/session: lease.reach), past the
	// leader's expiry.
	ReachLong = "reach-long"
	// ChainNoGap: a chain's k need not be written a ping interval after
	// j was seen touched (zklock/internal/session: lease.gap is 0).
	ChainNoGap = "chain-no-gap"
	// LossLate: the holds a lapse of the lease ended are told lost 200 ms
	// after it, each (zklock/internal/session: lease.lapse).
	LossLate = "loss-late"
	// LapseLate: the lease's timer fires T/8 after the deadline instead
	// of at it (zklock/internal/session: lease.armLocked).
	LapseLate = "lapse-late"
	// GrantLate: a hold the session granted ("now") is handed to its
	// acquirer 200 ms after the verdict (zklock: Lock.attempt).
	GrantLate = "grant-late"

	// The lease's explorer (zklock/internal/session,
	// lease_explore_test.go) refuses the five above that live in the
	// session's floor, and these, each a bug of a property the others
	// leave alone.

	// GrantIgnoresLease: the grant does not look at the lease's deadline
	// (session: sessionState.grantableLocked).
	GrantIgnoresLease = "grant-ignores-lease"
	// GoneWhileDown: a grant asked while the connection is down is told
	// that its node went with its session, which may live on (session:
	// sessionState.grantableLocked).
	GoneWhileDown = "gone-while-down"
	// NoRenewal: the renewer never syncs; only writes, and the syncs of
	// grants that wait, renew the lease (session: lease.renew).
	NoRenewal = "no-renewal"
	// LapseEndUntold: the end of a lapse of the lease is not told
	// (session: lease.confirmed).
	LapseEndUntold = "lapse-end-untold"

	// The eighth review's, each refused by the lease's explorer.

	// ChainNoAfter: a proof closes its own chain, as its own k, instead of
	// one answered before it was queued (session: Lease.proved).
	ChainNoAfter = "chain-no-after"
	// TimeoutAsked: the lease's bounds derive from the session timeout
	// asked for, not the one the server granted (session: Lease.Timeout).
	TimeoutAsked = "timeout-asked"
	// TimeoutLarger: the lease's bounds derive from the larger of the
	// asked and granted timeouts (session: Lease.Timeout).
	TimeoutLarger = "timeout-larger"
	// LeaseFromProof: the lease's former rule: it reaches T/4 past each
	// proof's own write, with no chain (session: Lease.proved), which
	// assumed a follower that reports touches ahead of what it forwards.
	LeaseFromProof = "lease-from-proof"
	// NewSessionKeepsHolds: a connection in a new session, its old one's
	// expiry unseen, keeps the old session's holds and lease (session:
	// sessionState.transitionLocked).
	NewSessionKeepsHolds = "new-session-keeps-holds"

	// The ninth review's, each refused by the lease's explorer.

	// AuthTouches: a reply confirms the touch of an auth packet, told
	// apart by the Java client's xid only, while go-zookeeper sends its
	// auths with ordinary xids (wire: pending.untouched).
	AuthTouches = "auth-touches"
	// TimeoutKeptLonger: the lease keeps the reach of the longest timeout
	// granted in the session, not the latest grant's (session:
	// Lease.Timeout).
	TimeoutKeptLonger = "timeout-kept-longer"
	// WallClock: the lease keeps its times on the wall clock, as unix
	// nanoseconds (internal/mono: Of and Time.Std).
	WallClock = "wall-clock"
	// HandshakeFromAnswer: a connect answer is dated by when it was read,
	// not by when its request was written, as the leader's touch of the
	// session (wire: replies.readConnect).
	HandshakeFromAnswer = "handshake-from-answer"
	// PingsInRing: go-zookeeper's pings are counted in the tap's ring of
	// writes, which dates a proof with no waiter by the first write after
	// its queueing (wire: Tap.began).
	PingsInRing = "pings-in-ring"
	// UntoldGrantIgnored: under WithLossOnExpiryOnly, the deadline keeps
	// the reach of the timeouts granted so far while a reconnection's
	// connect answer, which may grant less, is on its way (session:
	// Lease.reachNow).
	UntoldGrantIgnored = "untold-grant-ignored"

	// The tenth review's, each refused by the lease's explorer.

	// GrantWholeReach: under WithLossOnExpiryOnly, a hold is granted on
	// the whole 9T/8 reach, past the leader's expiry, instead of within
	// 7T/8 (session: Lease.grantableLocked).
	GrantWholeReach = "grant-whole-reach"
	// GrantNoMargin: a hold is granted while the deadline lies ahead at
	// all, without the T/16 that leaves a renewal time to keep it
	// (session: Lease.grantableLocked).
	GrantNoMargin = "grant-no-margin"
)

// Names lists the seeded bugs.
func Names() []string {
	return []string{GrantBeforeListing, TouchFromAnswer, DeleteWrongCreate, WatchGrantsEarly, CreateBeforeDelete,
		TxnUnknownRequeued, ApartStops, UnknownBeforeWire,
		ReachLong, ChainNoGap, LossLate, LapseLate, GrantLate,
		GrantIgnoresLease, GoneWhileDown, NoRenewal, LapseEndUntold,
		ChainNoAfter, TimeoutAsked, TimeoutLarger, LeaseFromProof, NewSessionKeepsHolds,
		AuthTouches, TimeoutKeptLonger, WallClock, HandshakeFromAnswer, PingsInRing, UntoldGrantIgnored,
		GrantWholeReach, GrantNoMargin}
}

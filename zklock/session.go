package zklock

import (
	"context"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/closed"
	"github.com/tierlock/tierlock/zklock/internal/session"
)

// Session is one client's connection to ZooKeeper, shared by all its locks,
// like etcd's concurrency.Session. It tracks the ZooKeeper session's state
// and the holds of its locks, and ends those holds when the connection
// drops, the session expires or is replaced, or the session can no longer
// be confirmed with the ensemble's leader (its lease: see the package
// doc's Loss). A Session
// outlives an expiry: go-zookeeper reconnects with a new session and the
// session's locks work again.
//
// State comes from a source that never drops an event: go-zookeeper's
// event callback, which it calls synchronously for every event (under
// Connect), or polling Conn.State and Conn.SessionID (under NewSession).
// Its event channel, which drops events once six are unread, is not relied
// on.
type Session struct {
	f      *session.Floor // the connection, its states, the lease, the grant: package session
	stalls stallBoard     // its waits stalled behind a session with no connection (stalled.go)
}

// State reports the session's current state.
func (s *Session) State() State {
	if s == nil {
		return StateClosed
	}
	return State(s.f.State())
}

// SessionID returns the id of the current ZooKeeper session (0 before the
// first one). It changes after an expiry.
func (s *Session) SessionID() int64 {
	if s == nil {
		return 0
	}
	return s.f.SessionID()
}

// Conn returns the underlying go-zookeeper connection, for reads and for
// requests this package does not make. Under a chroot (see Connect) its
// paths live under the chroot too, as the session's own.
func (s *Session) Conn() *zk.Conn {
	if s == nil {
		return nil
	}
	return s.f.Conn()
}

// Request runs req on the session's connection (Conn) for code built on
// the session that makes requests of its own, so that Close waits for it
// (a second at most) before it closes the connection, as for the
// session's own requests: go-zookeeper v1.0.4 mishandles a request that
// meets Close (CreateContainer's answer written as it is read; a
// connection goroutine blocked for ever). Under NewSession the caller
// closes the connection, after Close, which does not wait for req. It
// returns req's error; the
// session's, ErrSessionClosed, once Close began, req not run; or ctx's
// cause once ctx ended, req then finishing in the background, so that
// what req writes must not be read after that.
func (s *Session) Request(ctx context.Context, req func(*zk.Conn) error) error {
	switch {
	case s == nil:
		return errNil("Session")
	case ctx == nil:
		return ErrNilContext
	case req == nil:
		return nilError{msg: "zklock: nil request"}
	}
	conn := s.f.Conn()
	return s.f.Request(ctx, func() error { return req(conn) })
}

// LossOnExpiryOnly reports whether the session keeps holds through
// disconnections (WithLossOnExpiryOnly): its holds may overlap another
// process's for up to an eighth of the session timeout, which code built
// on the session (leader election, say) may need to tell its users.
func (s *Session) LossOnExpiryOnly() bool { return s != nil && s.f.Config().ExpiryOnly }

// Logger returns the logger the session and its locks log to (see
// WithLogger), for code built on the session, such as package tier.
func (s *Session) Logger() *slog.Logger {
	if s == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.f.Config().Logger
}

// Done is closed when the session is closed.
func (s *Session) Done() <-chan struct{} {
	if s == nil {
		return closed.Chan
	}
	return s.f.Done()
}

// Flush sends the session's writes that are held back now: a released
// node's delete waits a moment (100µs) for a create of the session to
// carry it, in one multi. A caller that waits for that delete (see
// WithDeleteHandler) and knows that no create of the session is coming
// (no other acquisition of its process on the path) calls Flush, so that
// its wait is one round trip and not that moment more: package zkcompat's
// Unlock, which returns once the server answered its node's delete.
func (s *Session) Flush() {
	if s != nil {
		s.f.Writes().Flush()
	}
}

// Close ends the session: every hold on it ends (ErrSessionClosed), locks
// on it report ErrSessionClosed, and background work stops. A connection
// made by Connect is closed, and the server deletes the session's
// ephemeral nodes at once. Under NewSession the caller's connection stays
// open, so Close waits until the deletes of released nodes are done (or
// their session is over): while the connection is up and the server
// refuses a delete for another reason than the node's absence (an ACL,
// say), that wait lasts until the session ends. Close waits for the
// session's own goroutines, never for the state listener
// (WithStateListener): a listener call in progress, which may be the one
// calling Close, can still be running when Close returns, and the
// listener is told StateClosed last, after it. Close is idempotent.
func (s *Session) Close() error {
	if s == nil {
		return errNil("Session")
	}
	s.f.Close()
	return nil
}

// LeaseStats counts how the session's lease (see WithLossOnExpiryOnly)
// bore on its locks since the session was made.
type LeaseStats struct {
	// Waits counts grants that had to wait for the session to be
	// confirmed with the leader before they could be made.
	Waits int64
	// Lapses counts the times the lease ran out while holds existed,
	// ending them with ErrLeaseExpired.
	Lapses int64
	// LateProofs counts the session's writes and syncs that succeeded but
	// came back too late to renew the lease for their round trip: longer
	// than keeps the lease ahead (a twelfth of the session timeout with
	// the servers' tick unknown), sent right after the proof before them.
	// (The first after a quiet spell renews nothing at any round trip, and
	// is not counted.) A grant then waits until a proof renews the lease;
	// while every round trip is above a sixth of the session timeout (the
	// tick unknown), none can, and no lock of the session is granted, free
	// or not, but just after a new connection: the network (or the server)
	// is too slow for the session timeout, not the lock held.
	LateProofs int64
	// LastLateRoundTrip is the round trip of the latest late proof.
	LastLateRoundTrip time.Duration
	// Bound is the lease's reach: how long after the latest touch the
	// leader is shown to have heard of the session vouches for its holds,
	// seven eighths of the negotiated session timeout (nine eighths
	// under WithLossOnExpiryOnly).
	Bound time.Duration
	// Timeout is the session timeout the lease's bounds derive from: the
	// least the servers granted the session (members may be set apart:
	// each may touch it with its own), the one asked for until a server
	// answered.
	Timeout time.Duration
}

// LeaseStats reports the session's lease counters.
func (s *Session) LeaseStats() LeaseStats {
	if s == nil {
		return LeaseStats{}
	}
	waits, lapses, late, lastLate, bound, timeout := s.f.Lease().Stats()
	return LeaseStats{Waits: waits, Lapses: lapses, LateProofs: late, LastLateRoundTrip: lastLate, Bound: bound, Timeout: timeout}
}

package tier

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// WaitError is the error of an acquisition whose wait ended without the
// lock: its context ended, the lock or its session was closed, or
// ZooKeeper refused it. It names the lock (and the registry's key), the
// tier the wait ended in and how long it spent in each, and who held the
// lock, with its owner:
//
//   - in tier 1 (TierGate), the goroutine of this process ahead of it in
//     the gate: one holding the lock (since when, on which node), or one
//     waiting for ZooKeeper, and then who holds the lock there, as that
//     goroutine's node knows it (the goroutines of a process share what
//     their node knows); an RWLock's or a Semaphore's says how this
//     process holds its gate (writer, readers, permits);
//   - in tier 2 (TierZooKeeper), the holder of the lock: its node, what
//     its creator wrote (pid@host and label, for tierlock) and its
//     session (see zklock.WaitError, whose Behind this is).
//
// Where the process's node does not know the holder to be current, one
// read at the end of a wait whose context ended names it (see
// zklock.Lock.WaitEnded); a successful acquisition sends nothing for it.
// A wait that ends while the session has no connection to ZooKeeper says
// since when (Outage) instead of reading (in tier 1, a Lock's).
//
// errors.Is sees Err, so errors.Is(err, context.DeadlineExceeded) holds
// for a wait that timed out, and errors.Is(err, ErrClosed) for one that
// Close ended; errors.Is(err, ErrDisconnected) holds for one that ended
// during an outage.
type WaitError struct {
	Path   string        // the lock path
	Key    string        // the registry key; "" outside a registry
	Tier   Tier          // TierGate or TierZooKeeper: where the wait ended
	Waited time.Duration // from the call to its return
	Gate   time.Duration // of Waited, the time spent in tier 1 (this process's gate)
	Holder string        // who held the lock, with its owner; "" when nothing was known
	Outage time.Time     // when the session lost its connection, for a wait that ended with none; zero otherwise
	Err    error         // why the wait ended
}

func (e *WaitError) Error() string {
	var b strings.Builder
	b.WriteString("tier: acquire ")
	if e.Key != "" {
		fmt.Fprintf(&b, "key %q (%s)", e.Key, e.Path)
	} else {
		b.WriteString(e.Path)
	}
	fmt.Fprintf(&b, ": waited %v", e.Waited.Round(time.Millisecond))
	switch {
	case e.Tier == TierGate:
		b.WriteString(" in tier 1 (this process's gate)")
	case e.Gate >= time.Millisecond:
		z := "under 1ms"
		if d := e.Waited - e.Gate; d >= time.Millisecond {
			z = d.Round(time.Millisecond).String()
		}
		fmt.Fprintf(&b, ", %v in tier 1 (this process's gate) then %s in tier 2 (ZooKeeper)", e.Gate.Round(time.Millisecond), z)
	default:
		b.WriteString(" in tier 2 (ZooKeeper)")
	}
	if e.Holder != "" {
		b.WriteString(", " + e.Holder)
	}
	b.WriteString(": " + strings.ReplaceAll(strings.TrimPrefix(e.Err.Error(), "tier: "), "zklock: ", ""))
	return b.String()
}

// Unwrap returns why the wait ended.
func (e *WaitError) Unwrap() error { return e.Err }

// Is reports whether target is ErrDisconnected and the wait ended during
// an outage of the session's connection.
func (e *WaitError) Is(target error) bool { return target == ErrDisconnected && !e.Outage.IsZero() }

// gateWait says who a wait that ended in tier 1 waited behind, and since
// when the session had no connection if it had none (zero otherwise).
type gateWait func(ctx context.Context, start time.Time, err error) (holder string, outage time.Time)

// waitEnded is the error of an acquisition of path p, begun at start,
// that ended with err (nil stays nil): a WaitError in tier 2 when zklock's
// WaitError is in err (its Behind says who held the lock, its Waited how
// long of the wait was spent there), in tier 1 when its context or Close
// ended it otherwise (gate says whom it waited behind), and err itself
// when it ended no wait (a refusal before queueing). A call on a lock
// closed before it began is not passed here: it waited for nothing, and
// says ErrClosed alone.
func waitEnded(ctx context.Context, p string, start time.Time, gate gateWait, err error) error {
	var zw *zklock.WaitError
	e := &WaitError{Path: p, Waited: time.Since(start)}
	switch {
	case err == nil:
		return nil
	case errors.As(err, &zw):
		e.Tier, e.Holder, e.Outage, e.Err = TierZooKeeper, zw.Behind(), zw.Outage, cause(zw.Err)
		e.Gate = max(e.Waited-zw.Waited, 0)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrClosed), errors.Is(err, zklock.ErrClosed):
		// zklock's ErrClosed bare: our Close came between the gate and the
		// ask for the node, which zklock refused.
		e.Tier, e.Gate, e.Err = TierGate, e.Waited, cause(err)
		e.Holder, e.Outage = gate(ctx, start, err)
	default:
		return err
	}
	return e
}

// cause is why a wait ended, as this package reports it: zklock's
// ErrClosed (our own Close ended the zklock lock's wait) is ErrClosed,
// anything else is itself.
func cause(err error) error {
	if errors.Is(err, zklock.ErrClosed) {
		return ErrClosed
	}
	return err
}

// withKey names a registry's key in err's WaitError, which the
// acquisition that returned err made (nobody else has seen it yet).
func withKey(err error, key string) error {
	var e *WaitError
	if errors.As(err, &e) {
		e.Key = key
	}
	return err
}

// tierOf is the tier an acquisition's error says it ended in, for the
// observer's Failed event: 0 when it is no WaitError.
func tierOf(err error) Tier {
	var e *WaitError
	if errors.As(err, &e) {
		return e.Tier
	}
	return 0
}

// gateHolder says whom a wait that ended in the lock's gate waited
// behind: the goroutine of this process ahead of it, and then who holds
// the lock, as the process's node knows it (or one read finds it: see
// zklock.Lock.WaitEnded).
func (l *Lock) gateHolder(ctx context.Context, start time.Time, err error) (string, time.Time) {
	zw := l.zk.WaitEnded(ctx, start, err)
	if h := l.current.Load(); h != nil {
		s := fmt.Sprintf("held by a goroutine of this process for %v on node %s", time.Since(h.start).Round(time.Millisecond), path.Base(h.node))
		if !zw.Outage.IsZero() {
			s += ", " + zw.Behind() // the outage, and what this process last saw
		}
		return s, zw.Outage
	}
	// The goroutine ahead is queued in ZooKeeper, or about to be.
	return "behind a goroutine of this process waiting for ZooKeeper, " + zw.Behind(), zw.Outage
}

// gateHolder says who holds the read/write lock's gate in this process.
func (rw *RWLock) gateHolder(context.Context, time.Time, error) (string, time.Time) {
	return rw.localHolder(), time.Time{}
}

func (rw *RWLock) localHolder() string {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	switch {
	case rw.writer != nil:
		return fmt.Sprintf("behind the write lock held by a goroutine of this process for %v on node %s",
			time.Since(rw.writer.start).Round(time.Millisecond), path.Base(rw.writer.node))
	case rw.riders > 0 && rw.rHold != nil:
		return fmt.Sprintf("behind %d readers of this process on node %s", rw.riders, path.Base(rw.rHold.Node()))
	}
	return "behind goroutines of this process ahead in the gate (queued in ZooKeeper, or between holds)"
}

// gateHolder says how the semaphore's permits are taken in this process.
func (sem *Semaphore) gateHolder(context.Context, time.Time, error) (string, time.Time) {
	return fmt.Sprintf("behind goroutines of this process holding or queueing for %d of %d permits", sem.adm.inUse(), sem.n), time.Time{}
}

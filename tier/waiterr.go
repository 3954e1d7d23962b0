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
// tier the wait ended in, how long it waited, and who held the lock as far
// as the waiter knew, from what it had seen anyway (no request is made to
// tell it):
//
//   - in tier 1 (TierGate), a goroutine of this process: how long it has
//     held the lock, and on which node, or that it is itself queued in
//     ZooKeeper;
//   - in tier 2 (TierZooKeeper), another process: the queue's first node
//     and the node ours watched, with who created it (see
//     zklock.WaitError, whose Behind this is).
//
// errors.Is sees Err, so errors.Is(err, context.DeadlineExceeded) holds
// for a wait that timed out, and errors.Is(err, ErrClosed) for one that
// Close ended.
type WaitError struct {
	Path   string        // the lock path
	Key    string        // the registry key; "" outside a registry
	Tier   Tier          // TierGate or TierZooKeeper
	Waited time.Duration // from the call to its return
	Holder string        // who held the lock, as far as the waiter knew; "" when it knew nothing
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
	fmt.Fprintf(&b, ": waited %v in ", e.Waited.Round(time.Millisecond))
	if e.Tier == TierGate {
		b.WriteString("tier 1 (this process's gate)")
	} else {
		b.WriteString("tier 2 (ZooKeeper)")
	}
	if e.Holder != "" {
		b.WriteString(", " + e.Holder)
	}
	b.WriteString(": " + strings.ReplaceAll(strings.TrimPrefix(e.Err.Error(), "tier: "), "zklock: ", ""))
	return b.String()
}

// Unwrap returns why the wait ended.
func (e *WaitError) Unwrap() error { return e.Err }

// waitEnded is the error of an acquisition of path p, begun at start,
// that ended with err (nil stays nil): a WaitError in tier 2 when zklock's
// WaitError is in err (its Behind says whom the node waited behind), in
// tier 1 when its context or Close ended it otherwise (holder says who
// holds the gate), and err itself when it ended no wait (a refusal before
// queueing). A call on a lock closed before it began is not passed here:
// it waited for nothing, and says ErrClosed alone.
func waitEnded(p string, start time.Time, holder func() string, err error) error {
	var zw *zklock.WaitError
	e := &WaitError{Path: p, Waited: time.Since(start)}
	switch {
	case err == nil:
		return nil
	case errors.As(err, &zw):
		e.Tier, e.Holder, e.Err = TierZooKeeper, zw.Behind(), cause(zw.Err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrClosed):
		e.Tier, e.Holder, e.Err = TierGate, holder(), err
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

// gateHolder says who holds the lock's gate, for a wait that ended there.
func (l *Lock) gateHolder() string {
	h := l.current.Load()
	if h == nil {
		return "behind a goroutine of this process that holds no node yet (queued in ZooKeeper, or between holds)"
	}
	return fmt.Sprintf("behind a goroutine of this process holding it for %v on node %s",
		time.Since(h.start).Round(time.Millisecond), path.Base(h.node))
}

// gateHolder says who holds the read/write lock's gate in this process.
func (rw *RWLock) gateHolder() string {
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
func (sem *Semaphore) gateHolder() string {
	return fmt.Sprintf("behind goroutines of this process holding or queueing for %d of %d permits", sem.adm.inUse(), sem.n)
}

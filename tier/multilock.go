package tier

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Errors of the multi-lock.
var (
	// ErrNilMember reports a nil Member given to NewMultiLock.
	ErrNilMember = errors.New("tier: nil multi-lock member")
	// ErrDuplicateMember reports two members of one multi-lock on one path,
	// whatever their kinds: the same lock twice would wait for itself, and
	// the read and the write side of one RWLock are one lock (the write
	// side alone excludes everyone).
	ErrDuplicateMember = errors.New("tier: two multi-lock members on one path")
	// ErrNoMembers reports a multi-lock of no member.
	ErrNoMembers = errors.New("tier: multi-lock of no member")
)

// MemberError is the error of one member of a multi-lock: the reason an
// acquisition stopped at it, the loss of its hold (the cause of the held
// context), or its failed release. errors.Is sees through it to Err, so
// errors.Is(err, ErrLockLost) and errors.Is(err, ErrNodeDeleted) work on a
// lost multi-lock's cause as on a single lock's; errors.As gives the path.
type MemberError struct {
	Path string // the member's lock path
	Kind string // "mutex", "read" or "write"
	Err  error
}

func (e *MemberError) Error() string {
	return fmt.Sprintf("tier: multi-lock member %s (%s): %v", e.Path, e.Kind, e.Err)
}

// Unwrap returns the member's own error.
func (e *MemberError) Unwrap() error { return e.Err }

// MultiLock holds a set of locks as one hold (Curator's
// InterProcessMultiLock, Redisson's MultiLock): Acquire takes every member
// or none, and Release gives them back in reverse.
//
// Deadlock freedom: members are acquired one after the other in one global
// order, ascending by path (byte-wise), whatever order they were given in.
// Two callers whose sets overlap, in one process or in two, then take their
// common members in the same order, so neither can hold one while waiting
// for another that the other holds: a chain of waits only climbs in path
// order and cannot close into a cycle. The argument needs every lock a
// caller holds while it waits to come before the one it waits for: a
// caller already holding a lock (outside this multi-lock) that sorts after
// a member it has to wait for is outside it, as with any lock ordering.
//
// A MultiLock is immutable and safe for concurrent use; it owns nothing
// (closing the members is their owner's business) and several holds can
// exist at once when the members allow it (all of them read sides). The
// hold belongs to the context Acquire returns, as for a Lock.
type MultiLock struct {
	members []Member // in acquisition order: sorted by path (a test seam, export_test.go, builds one unsorted)
}

// multiHold is one hold of a MultiLock, reentrant by count.
type multiHold struct {
	m *MultiLock
	// vals carries the hold of every member (their keys, as the members
	// put them on their held contexts) and the acquiring context's values;
	// members are released with it. Set before the hold is published.
	vals  context.Context
	stops []func() bool // the loss watches, one per member

	mu        sync.Mutex
	count     int                     // Acquires not yet released; 0 once ended
	lost      error                   // the first member loss, a *MemberError
	cancelAcq context.CancelCauseFunc // ends the acquisition's waits
	ctx       context.Context         // the held context (&judged), once published
	cancel    context.CancelCauseFunc
	judged    judged
}

type multiKey struct{ m *MultiLock }

// NewMultiLock returns a multi-lock of members: *Lock values, and the
// Reader() or Writer() of *RWLock values. The members may live on different
// sessions. It refuses no member (ErrNoMembers), a nil member (ErrNilMember,
// or ErrNil for a nil lock inside a member), and two members on one path
// (ErrDuplicateMember).
func NewMultiLock(members ...Member) (*MultiLock, error) {
	if len(members) == 0 {
		return nil, ErrNoMembers
	}
	paths := make(map[string]int, len(members))
	for i, mem := range members {
		if mem == nil {
			return nil, fmt.Errorf("tier: NewMultiLock member %d: %w", i, ErrNilMember)
		}
		if err := mem.memberCheck(); err != nil {
			return nil, fmt.Errorf("tier: NewMultiLock member %d: %w", i, err)
		}
		p := mem.Path()
		if j, dup := paths[p]; dup {
			return nil, fmt.Errorf("%w: members %d and %d on %s", ErrDuplicateMember, j, i, p)
		}
		paths[p] = i
	}
	m := &MultiLock{members: slices.Clone(members)}
	slices.SortFunc(m.members, func(a, b Member) int { return cmp.Compare(a.Path(), b.Path()) })
	return m, nil
}

// Paths returns the members' paths in the order Acquire takes them.
func (m *MultiLock) Paths() []string {
	if m == nil {
		return nil
	}
	out := make([]string, len(m.members))
	for i, mem := range m.members {
		out[i] = mem.Path()
	}
	return out
}

// holdOf returns the live hold of m that ctx carries, or nil.
func (m *MultiLock) holdOf(ctx context.Context) *multiHold {
	h, _ := ctx.Value(multiKey{m}).(*multiHold)
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count <= 0 {
		return nil
	}
	return h
}

// Acquire takes every member, in path order, and returns a context that
// carries the whole hold: it has ctx's values (and each member's hold, so a
// member's own Token or re-entry works with it) but not its cancellation,
// and it is cancelled when the hold ends: by Release, or by the end of any
// member's hold (lost, released on its own, closed): context.Cause is then
// a *MemberError naming that member and wrapping its cause (ErrLockLost
// and the reason, for a loss).
//
// All or nothing: when ctx ends, or a member fails, or a member taken
// earlier is lost while a later one is awaited, the members already taken
// are released in reverse before Acquire returns the error, a *MemberError
// naming the member it stopped at (or the lost one).
//
// With a context that holds this multi-lock, Acquire re-enters: a count,
// no ZooKeeper request. A context that holds some members (a Lock's held
// context, say) re-enters those members and acquires the others: mind the
// order (see MultiLock).
func (m *MultiLock) Acquire(ctx context.Context) (context.Context, error) {
	held, _, err := m.acquire(ctx, true)
	return held, err
}

// TryAcquire is Acquire that never waits: each member is tried (see
// Lock.TryAcquire, RWLock.TryRLock and TryLock); when one is busy it
// reports false, holding nothing, with the members tried before it released
// and no node left behind.
func (m *MultiLock) TryAcquire(ctx context.Context) (context.Context, bool, error) {
	return m.acquire(ctx, false)
}

func (m *MultiLock) acquire(ctx context.Context, wait bool) (context.Context, bool, error) {
	if m == nil {
		return nil, false, errNil("MultiLock")
	}
	if ctx == nil {
		return nil, false, ErrNilContext
	}
	if h := m.holdOf(ctx); h != nil {
		return h.reenter(ctx)
	}
	actx, cancelAcq := context.WithCancelCause(ctx)
	defer cancelAcq(nil)
	h := &multiHold{m: m, cancelAcq: cancelAcq}
	// vals is the context member i is acquired with: actx's cancellation
	// (the caller's, and a loss of a member taken before i), the caller's
	// values and the holds of members 0..i-1. Member i re-enters when vals
	// already carries its hold.
	vals := context.Context(actx)
	judge := membersJudge{h: h}
	for i, mem := range m.members {
		held, ok, err := mem.memberAcquire(vals, wait)
		if err == nil && ok {
			key, val, hctx := mem.memberHold(held)
			vals = context.WithValue(vals, key, val)
			judge.mems, judge.held = append(judge.mems, mem), append(judge.held, hctx)
			// The member's held context ends with its hold. AfterFunc
			// runs onLost on a goroutine of its own once it does; stop
			// in Release unregisters it before the members are released,
			// so a release of ours is never taken for a loss.
			h.stops = append(h.stops, context.AfterFunc(hctx, func() { h.onLost(mem, context.Cause(hctx)) }))
			if testHookMemberAcquired != nil {
				testHookMemberAcquired(m, i)
			}
			continue
		}
		if err != nil {
			h.mu.Lock()
			lost := h.lost
			h.mu.Unlock()
			if lost != nil && ctx.Err() == nil {
				// Our own cancellation: an earlier member was lost.
				err = lost
			} else {
				err = &MemberError{Path: mem.Path(), Kind: mem.memberKind(), Err: err}
			}
		}
		return nil, false, errors.Join(err, h.rollback(vals, i))
	}
	h.mu.Lock()
	if lost := h.lost; lost != nil {
		// A member was lost before the hold was published: its onLost
		// ran while h.cancel was nil and cancelled nothing a caller will
		// see, so a hold published now would never end. Give all back.
		// (onLost and this check both run under mu: a loss is either
		// recorded before this check, and seen here, or finds h.cancel
		// set below, and cancels the published hold.)
		h.mu.Unlock()
		return nil, false, errors.Join(lost, h.rollback(vals, len(m.members)))
	}
	h.vals = vals
	h.count = 1
	h.ctx, h.cancel = h.judged.begin(vals, multiKey{m}, h, judge)
	h.mu.Unlock()
	return h.ctx, true, nil
}

// reenter counts one more Acquire of h, unless it has been lost.
func (h *multiHold) reenter(ctx context.Context) (context.Context, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if told(h.ctx) != nil { // not judged: a judgment's loss takes mu (onLost)
		return nil, false, toldCause(h.ctx)
	}
	h.count++
	return ctx, true, nil
}

// membersJudge judges a multi-lock's hold by its members' held contexts,
// each judged (see judged): a member found lost ends the hold at once
// (onLost), as its AfterFunc would a moment later.
type membersJudge struct {
	h    *multiHold
	mems []Member
	held []context.Context
}

// Err returns the loss of the first member found lost, nil while all
// stand. mu must not be held.
func (j membersJudge) Err() error {
	for i, hctx := range j.held {
		if hctx.Err() != nil {
			cause := context.Cause(hctx)
			j.h.onLost(j.mems[i], cause)
			return cause
		}
	}
	return nil
}

// onLost ends the hold because mem's hold ended with cause. It runs on
// AfterFunc's goroutine. Under mu it either finds the hold published (and
// cancels it) or records the loss, which the acquiring goroutine reads
// under mu before it publishes, so a loss is never missed by both.
func (h *multiHold) onLost(mem Member, cause error) {
	err := &MemberError{Path: mem.Path(), Kind: mem.memberKind(), Err: cause}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost == nil {
		h.lost = err
	}
	h.cancelAcq(err)
	if h.cancel != nil {
		h.cancel(err)
	}
}

// rollback releases members n-1 down to 0, which vals holds, after their
// loss watches are stopped.
func (h *multiHold) rollback(vals context.Context, n int) error {
	for _, stop := range h.stops {
		stop()
	}
	return h.m.releaseMembers(vals, n)
}

// releaseMembers releases members n-1 down to 0 with vals, going on past a
// failure: every member is given back whatever another's release says.
func (m *MultiLock) releaseMembers(vals context.Context, n int) error {
	var errs []error
	for i := n - 1; i >= 0; i-- {
		mem := m.members[i]
		if err := mem.memberRelease(vals); err != nil {
			errs = append(errs, &MemberError{Path: mem.Path(), Kind: mem.memberKind(), Err: err})
		}
	}
	return errors.Join(errs...)
}

// Release ends one Acquire of the hold held carries; the last one cancels
// the held context and releases every member in reverse order (each member
// releases its ZooKeeper node before its local gate). Releasing with a
// context that does not hold this multi-lock, or more often than acquired,
// returns ErrNotHolder and changes nothing. If the hold was lost, the last
// Release still releases every member and returns an error wrapping the
// lost member's *MemberError (and so ErrLockLost).
func (m *MultiLock) Release(held context.Context) error {
	if m == nil {
		return errNil("MultiLock")
	}
	if held == nil {
		return ErrNilContext
	}
	h, _ := held.Value(multiKey{m}).(*multiHold)
	if h == nil {
		return ErrNotHolder
	}
	h.mu.Lock()
	if h.count <= 0 {
		h.mu.Unlock()
		return ErrNotHolder
	}
	h.count--
	if h.count > 0 {
		h.mu.Unlock()
		return nil
	}
	lost := h.lost
	h.cancel(errReleased)
	h.mu.Unlock()
	err := h.rollback(h.vals, len(m.members))
	if lost != nil && !errors.Is(err, ErrLockLost) {
		err = errors.Join(lost, err)
	}
	return err
}

// Tokens returns the fencing token of each member's hold, by path: send
// each resource the token of the lock that guards it.
func (m *MultiLock) Tokens(held context.Context) (map[string]int64, error) {
	if m == nil {
		return nil, errNil("MultiLock")
	}
	if held == nil {
		return nil, ErrNilContext
	}
	h := m.holdOf(held)
	if h == nil {
		return nil, ErrNotHolder
	}
	out := make(map[string]int64, len(m.members))
	for _, mem := range m.members {
		tok, err := mem.memberToken(h.vals)
		if err != nil {
			return nil, &MemberError{Path: mem.Path(), Kind: mem.memberKind(), Err: err}
		}
		out[mem.Path()] = tok
	}
	return out, nil
}

// HoldCount reports how many times the hold ctx carries has been acquired
// and not yet released: 0 when ctx does not hold this multi-lock.
func (m *MultiLock) HoldCount(ctx context.Context) int {
	if m == nil || ctx == nil {
		return 0
	}
	h := m.holdOf(ctx)
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

// testHookMemberAcquired, when set by a test, runs in Acquire after member
// i of m was taken and before the next one is asked for.
var testHookMemberAcquired func(m *MultiLock, i int)

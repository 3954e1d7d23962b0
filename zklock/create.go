package zklock

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/zklock/internal/session"
	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// Queueing our node: its create, admitted with the listing pipelined
// behind it and queued for the session's writer (package writes), and the
// clean-up of a create given up (giveUp), and the retries of a create
// that failed (enqueueAgain: the missing parents made, and protection
// mode, which looks for our GUID after a create of unknown outcome before
// creating again: findOwn and sweep, protection.go). The wait that follows is
// wait.go's.

// enqueue creates our node and lists the queue, pipelined: the listing is
// sent right behind the create on the same session, so it sees our node
// and the whole exchange costs one round trip. A pending delete of the
// session goes in the same multi transaction as the create (see
// createAndList for which, and when it is taken). A create whose
// outcome is unknown (any error that is not the server's answer) may have
// been applied: before creating another, enqueueAgain looks for our GUID
// (protection mode), so no orphan blocks the queue.
func (l *Lock) enqueue(ctx context.Context, wait bool) (ourNode, error) {
	guid := newGUID()
	prefix := l.path + "/" + protectedPrefix + guid + l.marker
	n, err := l.createAndList(ctx, prefix, wait)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, errBusyDelete):
		return ourNode{}, err // nothing was sent
	case ctx.Err() == nil:
		return l.enqueueAgain(ctx, guid, prefix, err)
	case !session.Refusal(err) && !errors.Is(err, ctx.Err()):
		// The create failed, its outcome unknown, as ctx ended (when ctx
		// ended first, giveUp sweeps): the node may be there.
		l.sweepInBackground(guid)
		return ourNode{}, ctx.Err()
	}
	return ourNode{}, err
}

// createAndList is one create of our node with the listing pipelined
// behind it, the two admitted together by the bound on requests in flight.
// The create goes to the session's writer, which sends it with the
// session's other waiting writes (a released node's delete of this path
// ahead of it, in the queue's order); the listing goes once the create is
// on the wire, so that it sees our node, and the whole costs one round
// trip. On a connection the session did not dial, whose wire it cannot
// see, the listing goes as the create is handed to go-zookeeper
// (writes.Write.Handed): a listing that overtook the create finds no node
// of ours and is made again (position < 0 below). TryAcquire does not
// wait through a disconnection behind its path's queued delete: the lock
// counts as taken (by our own old node).
func (l *Lock) createAndList(ctx context.Context, prefix string, wait bool) (ourNode, error) {
	f := l.f
	if err := f.Flight().Admit(ctx, 2); err != nil {
		return ourNode{}, err
	}
	if !wait && f.State() != session.StateConnected && f.Writes().DeleteQueued(l.path) {
		f.Flight().GiveBack()
		f.Flight().GiveBack()
		return ourNode{}, errBusyDelete
	}
	if mutant.On(mutant.DeleteWrongCreate) {
		l.wrongDelete() // seeded bug: another node's delete queued ahead of our create
	}
	w := f.Writes().Create(l.path, prefix, l.data, l.acl)
	select {
	case <-w.Handed:
	case <-ctx.Done():
		f.Flight().GiveBack() // the listing's place (the create's is the writer's)
		l.giveUp(w, prefix)
		return ourNode{}, ctx.Err()
	}
	children, stat, lerr := l.listBehind(ctx)
	select {
	case <-w.Done:
	case <-ctx.Done():
		l.giveUp(w, prefix)
		return ourNode{}, ctx.Err()
	}
	if hook := testHookCreated.Load(); hook != nil {
		(*hook)()
	}
	r := w.Result()
	if r.Verdict != writes.Applied || r.Session == 0 {
		return ourNode{}, createErr(r)
	}
	n := ourNode{node: r.Results[0].String, owner: r.Session}
	if lerr == nil {
		n.q, n.at = queueOf(children, path.Base(n.node), l.parse)
		n.pzxid = stat.Pzxid
		if n.at < 0 {
			// The listing went out before the create was applied (across a
			// reconnect, ahead of a batch sent again, or ahead of a create
			// it was only handed behind): list again.
			n.q = nil
		}
	}
	return n, nil
}

// listBehind lists the queue, the request pipelined behind our create
// (admitted with it: its place is given back if ctx ended first).
func (l *Lock) listBehind(ctx context.Context) ([]string, *zk.Stat, error) {
	f := l.f
	if mutant.On(mutant.GrantBeforeListing) {
		f.Flight().GiveBack()
		return nil, nil, errNotListed // seeded bug: the listing not sent nor waited for
	}
	if ctx.Err() != nil {
		f.Flight().GiveBack()
		return nil, nil, ctx.Err()
	}
	var answered func()
	if hook := testHookListedBehind.Load(); hook != nil {
		answered = *hook
	}
	return l.listAdmitted(ctx, answered)
}

// listAdmitted lists the queue, a request whose place in the session's
// bound is admitted (and given back when it is answered), the way the
// floor chooses (Floor.List). answered (a test hook; nil: none) is called
// once the answer is in.
func (l *Lock) listAdmitted(ctx context.Context, answered func()) ([]string, *zk.Stat, error) {
	children, stat, err := l.f.List(ctx, l.path)
	if answered != nil && ctx.Err() == nil {
		answered()
	}
	return children, stat, err
}

// enqueueAgain is the retry machinery, which a first create that
// succeeded never pays for: it makes the missing parents, and after a
// create of unknown outcome looks for our GUID before creating again.
func (l *Lock) enqueueAgain(ctx context.Context, guid, prefix string, first error) (ourNode, error) {
	f := l.f
	var n ourNode
	mayExist := false
	pending := first // the first attempt's error, classified in the first round
	attempt := func() error {
		if pending != nil {
			e := pending
			pending = nil
			return l.createFailed(e, &mayExist)
		}
		if mayExist {
			found, owner, err := l.findOwn(guid)
			if err != nil {
				return err
			}
			if found != "" && owner == f.Conn().SessionID() {
				n.node, n.owner = found, owner
				return nil
			}
			if found != "" {
				// Created in a session that is now over: it goes with it.
				f.Go(func() { f.DeleteGuaranteed(found, owner) })
			}
			mayExist = false
		}
		var cerr error
		n, cerr = l.createAndList(ctx, prefix, true)
		if cerr == nil {
			return nil
		}
		return l.createFailed(cerr, &mayExist)
	}
	err := f.Retry(ctx, func() error {
		err := attempt()
		if errors.Is(err, errParentsMade) {
			// The parents made, the create goes again at once, as
			// zk.Lock's does, not after a pause (a first Lock of a new
			// path took 14 ms through the drop-in against zk.Lock's 3,
			// TestMissingPathMadeWithoutPause); a parent gone again goes
			// back to the pauses.
			err = attempt()
		}
		return err
	})
	if err != nil {
		if mayExist {
			l.sweepInBackground(guid) // given up with a create of unknown outcome
		}
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return ourNode{}, err
		}
		return ourNode{}, fmt.Errorf("zklock: queue on %s: %w", l.path, err)
	}
	return n, nil
}

// createFailed decides what a failed create asks for: the parents made,
// the caller told (a refusal), or protection mode (its outcome unknown).
// The error it returns is retried unless it is a refusal.
//
// A create refused for a missing parent made nothing, and the parents are
// made again each time one is: the lock path and its ancestors are
// containers, which the server reaps once empty, between our making and
// our create as well (a node of another session came and went), and
// someone's cleanup may delete them; nor does a making whose connection
// dropped say whether it was applied. Made only once, a second refusal
// would end the acquisition with the server's bare zk.ErrNoNode. Only a
// parent that cannot be made is the caller's to know (ensureParents: the
// session's chroot gone).
func (l *Lock) createFailed(err error, mayExist *bool) error {
	switch {
	case errors.Is(err, zk.ErrNoNode):
		if err := l.ensureParents(); err != nil {
			return err
		}
		return errParentsMade // created again at once (enqueueAgain), then retried like a lost connection
	case session.Refusal(err):
		return err
	}
	*mayExist = true
	return err
}

// errSessionChanged is a create answered while the session changed: its
// node's owner is unknown (see createAndList).
var errSessionChanged = errors.New("zklock: the session changed while a create was out")

// createErr is the error of a create that did not make our node in a
// known session, to its acquisition: the server's refusal, why its outcome
// is unknown or whose node it made is (protection mode takes over), the
// session's close (the session's own error, as the write path tells it),
// or a create too large to send.
func createErr(r writes.Result) error {
	switch r.Verdict {
	case writes.Applied:
		return errSessionChanged
	case writes.TooLarge:
		return fmt.Errorf("%w: the lock node's create (its ACL, its data): %w", ErrInvalidOption, r.Err)
	}
	return r.Err
}

// testHookListedBehind, when a test sets it, runs once the listing
// pipelined behind a create is answered.
var testHookListedBehind atomic.Pointer[func()]

// testHookCreated, when a test sets it, runs in createAndList between the
// create's answer and the read of the session that owns the node.
var testHookCreated atomic.Pointer[func()]

// errNotListed is listBehind's answer under the grant-before-listing bug:
// the listing was not waited for.
var errNotListed = errors.New("zklock: mutant: listing not waited for")

// wrongDelete is the delete-wrong-create bug: ahead of our create, the
// writer is given the delete of the wrong node, the queue's first that is
// another session's (holding, or next to hold). The queue's first is often
// our own released node, its delete still queued: the bug reads the queue
// again (up to 50 times) until that one is gone and another's leads, so
// that the wrong delete strikes a holder and the run's history checks see
// two holders (stress's TestMutantDeleteWrongCreate).
// A seeded bug only: its reads and sleeps cost nothing in a real build.
func (l *Lock) wrongDelete() {
	f := l.f
	sid := f.Conn().SessionID()
	for range 50 {
		children, _, err := f.Conn().Children(l.path)
		if err != nil {
			return
		}
		q := sortQueueBy(children, l.parse)
		if len(q) == 0 {
			return
		}
		node := l.path + "/" + q[0].name
		if _, st, err := f.Conn().Exists(node); err == nil && st != nil && st.EphemeralOwner != 0 && st.EphemeralOwner != sid {
			f.Writes().Delete(l.path, node, sid, nil)
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// newGUID returns a random (version 4) UUID in its canonical 36-character
// form with dashes, as Curator writes it.
//
// The GUID only has to be unique (protection mode finds our node by it),
// not secret, so it comes from math/rand/v2's generator, which the runtime
// seeds from the system's entropy and keeps per thread: no system call per
// acquisition.
func newGUID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[0:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:16], rand.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// giveUp gives up a create that ctx ended the wait for: the write path
// takes it back, or cleans up after it (writes.Queue.GiveUp): whatever it
// made is deleted before our caller can queue another create, and a
// create whose outcome or owner is unknown is looked for by our GUID.
func (l *Lock) giveUp(w *writes.Write, prefix string) {
	guid := prefix[len(l.path)+1+len(protectedPrefix):][:36]
	l.f.Writes().GiveUp(w, func() { l.sweepInBackground(guid) })
}

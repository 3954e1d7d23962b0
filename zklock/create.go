package zklock

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"path"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// Creating our node: admitted with the listing pipelined behind it, the
// path's pending delete taken (createAndList), the create request (a multi
// when it carries a pending delete), and the search for our GUID after a
// create of unknown outcome (findOwn; the clean-up of an abandoned create,
// abandon and sweep). What the next attempt does after a failed create is
// protection.go's; the queue's order and the wait are wait.go's.

// errNodeGone reports that our queued node disappeared before we held the
// lock.
var errNodeGone = errors.New("zklock: lock node vanished while queued")

// errBusyDelete makes TryAcquire report false: our previous node is still
// queued.
var errBusyDelete = errors.New("zklock: previous node not yet deleted")

// ourNode is our node in the queue, as enqueue leaves it.
type ourNode struct {
	node  string  // full path
	owner int64   // the session that created it
	q     []entry // the pipelined listing, sorted; nil when it failed or missed our node
	pzxid int64   // the listing's pzxid
}

// createAndList is one create of our node with the listing pipelined
// behind it, the two admitted together by the bound on requests in flight.
// Only once admitted does the create take a pending delete to carry: this
// path's own (a released node of ours on the path, which it must carry or
// wait to see written), or else another path's. Taken before admission, a
// delete would wait behind the session's whole backlog, its node first in
// its queue all the while, where the flusher, exempt from the bound, sends
// it within foldWait (model/deletes.pml, MUTANT_TAKE_BEFORE_ADMISSION).
func (l *Lock) createAndList(ctx context.Context, prefix string, wait bool) (ourNode, error) {
	s := l.s
	if err := s.flight.acquire(ctx, 2, s.life.ctx.Done()); err != nil {
		return ourNode{}, err
	}
	stale, err := l.takeDelete(ctx, wait)
	if err != nil {
		s.flight.giveBack()
		s.flight.giveBack()
		return ourNode{}, err
	}
	if stale == nil && l.pathKnown.Load() {
		stale = s.dels.takeOther()
	}
	s.lead(ctx) // after a quiet spell, the lease's sync goes first
	carried := stale
	if mutant.On(mutant.DeleteWrongCreate) {
		carried = l.wrongDelete(stale) // seeded bug: another node's delete carried
	}
	var n ourNode
	var dropped bool
	c := s.pipeline(ctx, prefix, request{write: true, admitted: true, do: func() error {
		var err error
		n.node, n.owner, dropped, err = l.create(prefix, carried)
		return err
	}}, wire.OpCreate, wire.OpMulti)
	if stale != nil {
		s.dels.sent(stale) // on the wire: a create on its path may follow
	}
	children, stat, lerr := l.listBehind(ctx)
	select {
	case <-c.fin:
	case <-ctx.Done():
		l.abandon(c, prefix, &n, &dropped, stale)
		return ourNode{}, ctx.Err()
	}
	if stale != nil && !dropped {
		s.deleteInBackground(stale.node, stale.owner) // the multi did not run
	}
	if c.err != nil {
		return ourNode{}, c.err
	}
	l.pathKnown.Store(true)
	if lerr == nil {
		n.q, n.pzxid = l.sortQueue(children), stat.Pzxid
		if position(n.q, path.Base(n.node), "") < 0 {
			// The listing went out on a new connection before the create
			// was applied (possible only across a reconnect): list again.
			n.q = nil
		}
	}
	return n, nil
}

// listBehind lists the queue, the request pipelined behind our create
// (admitted with it: its place is given back if ctx ended first).
func (l *Lock) listBehind(ctx context.Context) ([]string, *zk.Stat, error) {
	s := l.s
	if mutant.On(mutant.GrantBeforeListing) {
		s.flight.giveBack()
		return nil, nil, errNotListed // seeded bug: the listing not sent nor waited for
	}
	if ctx.Err() != nil {
		s.flight.giveBack()
		return nil, nil, ctx.Err()
	}
	// Written by the request's goroutine, read only after wait returned
	// nil (close(c.fin) happens before): on ctx's end the request may
	// still be running, and these must not be touched.
	var children []string
	var stat *zk.Stat
	err := s.launch(request{admitted: true, do: func() error {
		trace.Sent(s.conn, trace.OpList, l.path)
		c, st, err := s.conn.Children(l.path)
		trace.Listed(s.conn, trace.OpList, l.path, c, st, err)
		if err == nil {
			children, stat = c, st
		}
		return err
	}}).wait(ctx)
	if err != nil {
		return nil, nil, err
	}
	return children, stat, nil
}

// takeDelete returns the pending delete of the session that our create
// carries, after waiting until this path's delete is on the wire (see
// deleteQueue.take). TryAcquire does not wait through a disconnection:
// the lock counts as taken (by our own old node) until the delete can be
// sent.
func (l *Lock) takeDelete(ctx context.Context, wait bool) (*pendingDelete, error) {
	s := l.s
	for {
		if !wait && s.State() != StateConnected && s.dels.queued(l.path) {
			// Carried or waited for, the delete would hold the create
			// until the connection is back.
			return nil, errBusyDelete
		}
		d, inFlight := s.dels.take(l.path)
		if inFlight == nil {
			return d, nil
		}
		changed := s.stateChanged()
		select { // microseconds while connected: the delete is being written
		case <-inFlight:
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// create sends our node's create (carrying stale's delete) and reports the
// node, its owner and whether stale's node is gone. A create answered
// while the session changed (a pause past the session's life, say) fails
// with errSessionChanged: the node may be the old session's, gone with it,
// and the listing behind it from before. Its outcome is unknown, and
// protection mode reads its true owner from the node.
func (l *Lock) create(prefix string, stale *pendingDelete) (node string, owner int64, dropped bool, err error) {
	s := l.s
	before := s.conn.SessionID()
	node, dropped, err = s.createNode(prefix, l.data, l.acl, stale)
	if hook := testHookCreated.Load(); hook != nil {
		(*hook)()
	}
	owner = s.conn.SessionID()
	if err == nil && owner != before {
		err = errSessionChanged
	}
	return node, owner, dropped, err
}

// errSessionChanged is a create answered while the session changed: its
// node's owner is unknown (see createAndList).
var errSessionChanged = errors.New("zklock: the session changed while a create was out")

// testHookCreated, when a test sets it, runs in createAndList between the
// create's answer and the read of the session that owns the node.
var testHookCreated atomic.Pointer[func()]

// createNode creates prefix, ephemeral and sequential, carrying d's delete
// when d is not nil (one multi transaction; the create first, so that the
// tap knows it by its path either way). It reports whether d's node is
// gone: deleted, or already gone. When the delete fails (gone, or refused)
// the create is sent alone.
func (s *Session) createNode(prefix string, data []byte, acl []zk.ACL, d *pendingDelete) (node string, dropped bool, err error) {
	if d == nil || d.owner != s.conn.SessionID() {
		trace.Sent(s.conn, trace.OpCreate, prefix)
		node, err = s.conn.Create(prefix, data, zk.FlagEphemeralSequential, acl)
		trace.Answered(s.conn, trace.OpCreate, prefix, node, err)
		return node, false, err
	}
	trace.Sent(s.conn, trace.OpMulti, prefix)
	res, err := s.conn.Multi(
		&zk.CreateRequest{Path: prefix, Data: data, Acl: acl, Flags: zk.FlagEphemeralSequential},
		&zk.DeleteRequest{Path: d.node, Version: -1})
	trace.MultiAnswered(s.conn, prefix, res, err)
	switch {
	case err == nil && len(res) == 2:
		return res[0].String, true, nil
	case len(res) == 2 && res[0].Error == nil && res[1].Error != nil:
		// The carried delete failed, so the transaction did not run:
		// create alone. Its node was already gone, or the delete was
		// refused (an ACL on that node's path without DELETE: another
		// lock's affair, which must not fail this acquisition); a refused
		// delete is left to createAndList's guaranteed one.
		trace.Sent(s.conn, trace.OpCreate, prefix)
		node, err = s.conn.Create(prefix, data, zk.FlagEphemeralSequential, acl)
		trace.Answered(s.conn, trace.OpCreate, prefix, node, err)
		return node, errors.Is(res[1].Error, zk.ErrNoNode), err
	case len(res) == 2 && res[0].Error != nil:
		return "", false, res[0].Error
	}
	return "", false, err
}

// errNotListed is listBehind's answer under the grant-before-listing bug:
// the listing was not waited for.
var errNotListed = errors.New("zklock: mutant: listing not waited for")

// wrongDelete is the delete-wrong-create bug: the create carries the
// delete of the wrong node, the queue's first that is not the released one
// (stale's): another process's, holding or next to hold, in place of
// stale, which is deleted on its own.
func (l *Lock) wrongDelete(stale *pendingDelete) *pendingDelete {
	s := l.s
	children, _, err := s.conn.Children(l.path)
	if err != nil {
		return stale
	}
	for _, e := range l.sortQueue(children) {
		victim := l.path + "/" + e.name
		if stale != nil && victim == stale.node {
			continue
		}
		if stale != nil {
			s.deleteInBackground(stale.node, stale.owner)
		}
		return &pendingDelete{path: l.path, node: victim, owner: s.conn.SessionID()}
	}
	return stale
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

// abandon cleans up after a create that ctx gave up on: once the request
// completes, whatever it created is deleted, and when its outcome is
// unknown the queue is searched for our GUID until we know. n and dropped
// are written by the create's goroutine, read after c.fin closes.
func (l *Lock) abandon(c *call, prefix string, n *ourNode, dropped *bool, stale *pendingDelete) {
	s := l.s
	guid := prefix[len(l.path)+1+len(protectedPrefix):][:36]
	s.goBackground(func() {
		select {
		case <-c.fin:
		case <-s.life.hardStop:
			return
		}
		if stale != nil && !*dropped {
			s.deleteGuaranteed(stale.node, stale.owner)
		}
		if c.err == nil {
			s.deleteGuaranteed(n.node, n.owner)
			return
		}
		if refusal(c.err) {
			return // the server refused it: nothing was created
		}
		l.sweep(guid)
	})
}

// sweep searches the queue for the node carrying guid, a create of
// unknown outcome, until it knows or the session is over, and deletes the
// node if it is there: left, it would lead the queue for the session's
// life, and the session outlives any outage it reconnects within.
func (l *Lock) sweep(guid string) {
	s := l.s
	s.untilSessionOver(s.conn.SessionID(), func() (bool, error) {
		found, owner, err := l.findOwn(guid)
		if err == nil && found != "" {
			s.deleteGuaranteed(found, owner)
		}
		return err == nil, err
	})
}

// findOwn looks for the node carrying guid under the lock path, and the
// session that owns it. It syncs first: a follower that has not applied
// our create yet would answer "not found", and a second create would then
// queue behind our own orphan.
func (l *Lock) findOwn(guid string) (node string, owner int64, err error) {
	conn := l.s.conn
	if _, err := conn.Sync(l.path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "", 0, err
	}
	trace.Sent(conn, trace.OpList, l.path)
	children, st, err := conn.Children(l.path)
	trace.Listed(conn, trace.OpList, l.path, children, st, err)
	if errors.Is(err, zk.ErrNoNode) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	q := l.sortQueue(children)
	i := position(q, "", guid)
	if i < 0 {
		return "", 0, nil
	}
	node = l.path + "/" + q[i].name
	_, stat, err := conn.Exists(node)
	switch {
	case err != nil:
		return "", 0, err
	case stat == nil:
		return "", 0, nil
	}
	return node, stat.EphemeralOwner, nil
}

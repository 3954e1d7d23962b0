package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// Creating our node: the create request (a multi when it carries a pending
// delete), and what an acquisition does when a create fails, its outcome
// unknown (protection mode: the GUID looked for before another create).

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
		node, err = s.conn.Create(prefix, data, zk.FlagEphemeralSequential, acl)
		return node, false, err
	}
	res, err := s.conn.Multi(
		&zk.CreateRequest{Path: prefix, Data: data, Acl: acl, Flags: zk.FlagEphemeralSequential},
		&zk.DeleteRequest{Path: d.node, Version: -1})
	switch {
	case err == nil && len(res) == 2:
		return res[0].String, true, nil
	case len(res) == 2 && res[0].Error == nil && res[1].Error != nil:
		// The carried delete failed, so the transaction did not run:
		// create alone. Its node was already gone, or the delete was
		// refused (an ACL on that node's path without DELETE: another
		// lock's affair, which must not fail this acquisition); a refused
		// delete is left to createAndList's guaranteed one.
		node, err = s.conn.Create(prefix, data, zk.FlagEphemeralSequential, acl)
		return node, errors.Is(res[1].Error, zk.ErrNoNode), err
	case len(res) == 2 && res[0].Error != nil:
		return "", false, res[0].Error
	}
	return "", false, err
}

// What an acquisition does when its first create fails.

// enqueueAgain is the retry machinery, which a first create that
// succeeded never pays for: it makes the missing parents, and after a
// create of unknown outcome looks for our GUID before creating again.
func (l *Lock) enqueueAgain(ctx context.Context, guid, prefix string, first error) (ourNode, error) {
	s := l.s
	var n ourNode
	parentsMade, mayExist := false, false
	pending := first // the first attempt's error, classified in the first round
	err := s.retry(ctx, func() error {
		if pending != nil {
			e := pending
			pending = nil
			return l.createFailed(e, &parentsMade, &mayExist)
		}
		if mayExist {
			found, owner, err := l.findOwn(guid)
			if err != nil {
				return err
			}
			if found != "" && owner == s.conn.SessionID() {
				n.node, n.owner = found, owner
				return nil
			}
			if found != "" {
				// Created in a session that is now over: it goes with it.
				s.deleteInBackground(found, owner)
			}
			mayExist = false
		}
		var cerr error
		n, cerr = l.createAndList(ctx, prefix, true)
		if cerr == nil {
			return nil
		}
		return l.createFailed(cerr, &parentsMade, &mayExist)
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

// createFailed decides what a failed create asks for: the parents made
// (once), the caller told (a refusal), or protection mode (its outcome
// unknown). The error it returns is retried unless it is a refusal.
func (l *Lock) createFailed(err error, parentsMade, mayExist *bool) error {
	switch {
	case errors.Is(err, zk.ErrNoNode) && !*parentsMade:
		*parentsMade = true
		if err := l.ensureParents(); err != nil {
			return err
		}
		return errParentsMade // retried like a lost connection
	case refusal(err):
		return err
	}
	*mayExist = true
	return err
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

// sweepInBackground runs sweep on a goroutine the session tracks.
func (l *Lock) sweepInBackground(guid string) {
	l.s.goBackground(func() { l.sweep(guid) })
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
	children, _, err := conn.Children(l.path)
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

// ensureParents creates the lock path and its missing ancestors as
// container nodes, which the server removes once they are empty.
func (l *Lock) ensureParents() error {
	conn := l.s.conn
	var mk func(p string) error
	mk = func(p string) error {
		_, err := conn.CreateContainer(p, nil, zk.FlagContainer, l.acl)
		if errors.Is(err, zk.ErrNoNode) && path.Dir(p) != "/" {
			if err := mk(path.Dir(p)); err != nil {
				return err
			}
			_, err = conn.CreateContainer(p, nil, zk.FlagContainer, l.acl)
		}
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	}
	return mk(l.path)
}

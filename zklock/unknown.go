package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"
	"github.com/tierlock/tierlock/internal/trace"
)

// errParentsMade asks retry to create our node again once the missing
// parents exist.
var errParentsMade = errors.New("zklock: lock path created")

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

package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/session"
)

// What an acquisition does when its first create fails (enqueueAgain):
// the missing parents made, and a create whose outcome is unknown looked
// for by its GUID (Curator's protection mode: findOwn, sweep) before
// another is sent, so that no orphan of ours blocks the queue. A first
// create that succeeds never comes here.

// errParentsMade asks retry to create our node again once the missing
// parents exist.
var errParentsMade = errors.New("zklock: lock path created")

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

// sweepInBackground runs sweep on a goroutine the session tracks.
func (l *Lock) sweepInBackground(guid string) {
	l.f.Go(func() { l.sweep(guid) })
}

// WithPersistentPath makes the lock path, when the lock creates it, a
// persistent node, as go-zookeeper's zk.Lock makes it, rather than a
// container: the server keeps it, with any data written on it, once its
// last lock node is gone, where it deletes an empty container (with its
// data) within its container check (every minute by default). Code that
// keeps data on the lock path needs it; package zkcompat sets it. Missing
// ancestors above the lock path are containers still, and a lock path
// that exists is left as it is.
func WithPersistentPath() Option { return func(c *lockConfig) { c.persistent = true } }

// ensureParents creates the lock path and its missing ancestors as
// container nodes, which the server removes once they are empty; the
// lock path itself as a persistent node under WithPersistentPath. A
// parent that vanishes as the path below it is made (reaped, or deleted
// by someone) makes it return errParentGone, which the caller retries;
// the session's chroot gone, errChrootGone, which it cannot.
func (l *Lock) ensureParents() error { return l.makePath(l.path) }

// errParentGone asks retry to make the parents again: one of them,
// made or found just before, was gone when the path below it was made.
var errParentGone = errors.New("zklock: a parent of the lock path vanished as the lock path was made")

// errChrootGone is the error of a path whose top node cannot be made: the
// server refuses a child of the root only when the session's chroot, the
// root it sees, is gone. It wraps zk.ErrNoNode, which go-zookeeper's
// zk.Lock returns there (zkcompat passes it on).
var errChrootGone = fmt.Errorf("zklock: the session's chroot is gone (deleted since Connect found it): nothing can be locked under it until it is created again: %w", zk.ErrNoNode)

// makePath makes p, and its parents first when they are missing.
func (l *Lock) makePath(p string) error {
	err := l.makeNode(p)
	if errors.Is(err, zk.ErrNoNode) && path.Dir(p) != "/" {
		if err := l.makePath(path.Dir(p)); err != nil {
			return err
		}
		err = l.makeNode(p)
	}
	switch {
	case err == nil || errors.Is(err, zk.ErrNodeExists):
		return nil
	case !errors.Is(err, zk.ErrNoNode):
		return err
	case path.Dir(p) == "/":
		return errChrootGone
	}
	return errParentGone
}

// makeNode creates p: a container, or the lock path under
// WithPersistentPath a persistent node.
func (l *Lock) makeNode(p string) error {
	conn := l.f.Conn()
	// Through the floor, which Close waits for: CreateContainer meeting
	// Close is a data race in go-zookeeper (Floor.Request).
	return l.f.Request(context.Background(), func() error {
		var err error
		if p == l.path && l.persistent {
			_, err = conn.Create(p, nil, 0, l.acl)
		} else {
			_, err = conn.CreateContainer(p, nil, zk.FlagContainer, l.acl)
		}
		return err
	})
}

// sweep searches the queue for the node carrying guid, a create of
// unknown outcome, until it knows or the session is over, and deletes the
// node if it is there: left, it would lead the queue for the session's
// life, and the session outlives any outage it reconnects within.
func (l *Lock) sweep(guid string) {
	f := l.f
	f.UntilSessionOver(f.Conn().SessionID(), func() (bool, error) {
		found, owner, err := l.findOwn(guid)
		if err == nil && found != "" {
			f.DeleteGuaranteed(found, owner)
		}
		return err == nil, err
	})
}

// findOwn looks for the node carrying guid under the lock path, and the
// session that owns it. It syncs first: a follower that has not applied
// our create yet would answer "not found", and a second create would then
// queue behind our own orphan.
func (l *Lock) findOwn(guid string) (node string, owner int64, err error) {
	conn := l.f.Conn()
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
	ok, stat, err := conn.Exists(node)
	switch {
	case err != nil:
		return "", 0, err
	case !ok: // gone since the listing (go-zookeeper's stat is zero then, never nil)
		return "", 0, nil
	}
	return node, stat.EphemeralOwner, nil
}

package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
)

// What an acquisition's retried create relies on (enqueueAgain,
// create.go): the missing parents made, and a create whose outcome is
// unknown looked for by its GUID (Curator's protection mode: findOwn,
// sweep) before another is sent, so that no orphan of ours blocks the
// queue. A first create that succeeds never comes here.

// errParentsMade asks retry to create our node again once the missing
// parents exist.
var errParentsMade = errors.New("zklock: lock path created")

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
	q := sortQueueBy(children, l.parse)
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

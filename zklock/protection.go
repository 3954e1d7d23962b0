package zklock

import (
	"context"
	"errors"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
)

// What an acquisition does when its first create fails (Curator's
// protection mode; enqueueAgain, create.go, runs it): the missing parents
// made, and a create whose outcome is unknown looked for by its GUID
// (findOwn, sweep) before another is sent, so that no orphan of ours
// blocks the queue. A first create that succeeds never comes here.

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
// lock path itself as a persistent node under WithPersistentPath.
func (l *Lock) ensureParents() error {
	conn := l.f.Conn()
	create := func(p string) error {
		// Through the floor, which Close waits for: CreateContainer
		// meeting Close is a data race in go-zookeeper (Floor.Request).
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
	var mk func(p string) error
	mk = func(p string) error {
		err := create(p)
		if errors.Is(err, zk.ErrNoNode) && path.Dir(p) != "/" {
			if err := mk(path.Dir(p)); err != nil {
				return err
			}
			err = create(p)
		}
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	}
	return mk(l.path)
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
	_, stat, err := conn.Exists(node)
	switch {
	case err != nil:
		return "", 0, err
	case stat == nil:
		return "", 0, nil
	}
	return node, stat.EphemeralOwner, nil
}

package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"
	"github.com/tierlock/tierlock/zklock/internal/session"
)

// What an acquisition does when its first create fails (Curator's
// protection mode): the missing parents made, and a create whose outcome is
// unknown looked for by its GUID (findOwn, create.go) before another is
// sent, so that no orphan of ours blocks the queue. A first create that
// succeeds never comes here.

// errParentsMade asks retry to create our node again once the missing
// parents exist.
var errParentsMade = errors.New("zklock: lock path created")

// enqueueAgain is the retry machinery, which a first create that
// succeeded never pays for: it makes the missing parents, and after a
// create of unknown outcome looks for our GUID before creating again.
func (l *Lock) enqueueAgain(ctx context.Context, guid, prefix string, first error) (ourNode, error) {
	f := l.f
	var n ourNode
	parentsMade, mayExist := false, false
	pending := first // the first attempt's error, classified in the first round
	err := f.Retry(ctx, func() error {
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
			if found != "" && owner == f.Conn().SessionID() {
				n.node, n.owner = found, owner
				return nil
			}
			if found != "" {
				// Created in a session that is now over: it goes with it.
				f.DeleteInBackground(found, owner)
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

// ensureParents creates the lock path and its missing ancestors as
// container nodes, which the server removes once they are empty.
func (l *Lock) ensureParents() error {
	conn := l.f.Conn()
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

package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
)

// errParentsMade asks retry to create our node again once the missing
// parents exist.
var errParentsMade = errors.New("zklock: lock path created")

// errNodeGone reports that our queued node disappeared before we held the
// lock.
var errNodeGone = errors.New("zklock: lock node vanished while queued")

// queued is our node in the queue, as enqueue leaves it.
type queued struct {
	node  string  // full path
	owner int64   // the session that created it
	q     []entry // the pipelined listing, sorted; nil when it failed
	pzxid int64   // the listing's pzxid

	pos *positions // reports its place to the caller (position.go); nil: none
}

// attempt queues one node and waits for it to lead (or not, when !wait).
// It returns the hold, nil when !wait and the lock is taken, or an error;
// on an error no node of ours stays queued.
func (l *Lock) attempt(ctx context.Context, wait bool) (*hold, error) {
	l.s.queued(1)
	defer l.s.queued(-1)
	n, err := l.enqueue(ctx, newGUID(), wait)
	if errors.Is(err, errBusyDelete) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	giveUp := func() { l.s.pipe.queueDelete(l.path, n.node, n.owner) }
	if err := ctx.Err(); err != nil {
		giveUp()
		return nil, err
	}
	name := path.Base(n.node)
	q, token := n.q, n.pzxid
	if position(q, name, "") < 0 {
		// The listing went out on a new connection before the create was
		// applied (possible only across a reconnect): list again.
		q = nil
	}
	n.pos = l.newPositions(n.node, wait)
	n.pos.first(l.rule, q, name)
	if q == nil || !leads(l.rule, q, name) {
		if !wait {
			if q == nil {
				children, stat, err := l.list(ctx)
				if err != nil {
					giveUp()
					return nil, fmt.Errorf("zklock: list %s: %w", l.path, err)
				}
				q, token = l.sortQueue(children), stat.Pzxid
			}
			if !leads(l.rule, q, name) {
				giveUp()
				return nil, nil
			}
		} else if token, err = l.waitTurn(ctx, n, q); err != nil {
			// Even a node found gone is deleted: should the finding be
			// wrong, a node left behind would block the queue for the
			// session's life (the delete ends at once if it is gone or
			// its session is over).
			giveUp()
			return nil, err
		}
	}
	h := l.lead(n.node, n.owner, token)
	if err := l.install(ctx, h); err != nil {
		giveUp() // even when found gone: see above
		return nil, err
	}
	return h, nil
}

// listing is the outcome of a children read of the lock path.
type listing struct {
	children []string
	stat     *zk.Stat
	err      error
}

// listAsync reads the children of the lock path on a goroutine of the
// session's. Callers that need the listing behind an earlier request (the
// create) call it once that request is on the wire (see send).
func (l *Lock) listAsync() <-chan listing {
	ch := make(chan listing, 1)
	l.s.goBackground(func() {
		c, st, err := l.s.conn.Children(l.path)
		ch <- listing{c, st, err}
	})
	return ch
}

// list reads the children of the lock path, giving up (but letting the
// request complete in the background) when ctx ends.
func (l *Lock) list(ctx context.Context) ([]string, *zk.Stat, error) {
	select {
	case r := <-l.listAsync():
		return r.children, r.stat, r.err
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// enqueue creates our node and lists the queue, pipelined: the listing is
// sent right behind the create on the same session, so it sees our node
// and the whole exchange costs one round trip. The delete of a release not
// yet sent goes in the same multi transaction as the create. A create
// whose outcome is unknown (any error that is not the server's answer) may
// have been applied: before creating another, we look for our GUID
// (protection mode), so no orphan blocks the queue.
func (l *Lock) enqueue(ctx context.Context, guid string, wait bool) (queued, error) {
	var n queued
	// Credentials first (WithDigestAuth): a create under an ACL that
	// only they satisfy would be refused, or made anonymous.
	if err := l.s.awaitAuth(ctx); err != nil {
		return n, err
	}
	prefix := l.path + "/" + protectedPrefix + guid + l.marker
	stale, staleOwner, inFlight := l.s.pipe.take(l.path)
	if inFlight != nil {
		if err := l.awaitDelete(ctx, inFlight, wait); err != nil {
			return n, err
		}
	}
	// staleGone is set, on the goroutine that sends the create, once the
	// stale node is known to be deleted; read when enqueue returns, which
	// may be before that goroutine is done (ctx ended).
	var staleGone atomic.Bool
	if stale != "" {
		defer func() {
			if !staleGone.Load() { // the multi did not happen: delete it alone
				l.s.deleteInBackground(stale, staleOwner)
			}
		}()
	}
	create := func() (string, error) {
		if stale == "" || staleGone.Load() || staleOwner != l.s.conn.SessionID() {
			return l.s.conn.Create(prefix, l.data, zk.FlagEphemeralSequential, l.acl)
		}
		res, err := l.s.conn.Multi(
			&zk.DeleteRequest{Path: stale, Version: -1},
			&zk.CreateRequest{Path: prefix, Data: l.data, Acl: l.acl, Flags: zk.FlagEphemeralSequential})
		if err == nil && len(res) == 2 {
			staleGone.Store(true)
			return res[1].String, nil
		}
		if errors.Is(res0Err(res), zk.ErrNoNode) {
			// The stale node was already gone, so the transaction did not
			// run: create alone.
			staleGone.Store(true)
			return l.s.conn.Create(prefix, l.data, zk.FlagEphemeralSequential, l.acl)
		}
		if err == nil {
			err = fmt.Errorf("zklock: multi: %w", res0Err(res))
		}
		return "", err
	}
	parentsMade, mayExist := false, false
	err := l.s.retry(ctx, func() error {
		if mayExist {
			// An earlier create's outcome is unknown: it may have been
			// applied. Create again only once we know it was not.
			found, owner, err := l.findOwn(guid)
			if err != nil {
				return err
			}
			if found != "" && owner == l.s.conn.SessionID() {
				n.node, n.owner = found, owner
				return nil
			}
			if found != "" {
				// Created in a session that is now over: it goes with it.
				l.s.deleteInBackground(found, owner)
			}
			mayExist = false
		}
		var created string
		var owner int64
		var cerr error
		fin := l.s.send(ctx, guid, []int32{opCreate, opMulti}, func() {
			created, cerr = create()
			owner = l.s.conn.SessionID()
		})
		if ctx.Err() != nil {
			l.abandon(fin, guid, &created, &owner)
			return backoff.Permanent(ctx.Err())
		}
		// Pipelined behind the create: a sync when the lease needs one
		// (the grant will wait for it), and the listing.
		if l.leaseStale() {
			l.s.lease.refresh()
		}
		lst := l.listAsync()
		select {
		case <-fin:
		case <-ctx.Done():
			l.abandon(fin, guid, &created, &owner)
			return backoff.Permanent(ctx.Err())
		}
		switch {
		case cerr == nil:
			n.node, n.owner = created, owner
			select {
			case r := <-lst:
				if r.err == nil {
					n.q, n.pzxid = l.sortQueue(r.children), r.stat.Pzxid
				}
			case <-ctx.Done(): // the caller sees ctx and gives the node up
			}
			return nil
		case errors.Is(cerr, zk.ErrNoNode) && !parentsMade:
			parentsMade = true
			if err := l.ensureParents(); err != nil {
				return err
			}
			return errParentsMade // retried like a lost connection
		case refusal(cerr):
			return cerr
		default:
			mayExist = true
			return cerr
		}
	})
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return n, err
		}
		return n, fmt.Errorf("zklock: queue on %s: %w", l.path, err)
	}
	return n, nil
}

// leaseStale reports whether a grant now would have to wait for a sync.
func (l *Lock) leaseStale() bool {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.lease.freshLocked(time.Now())
}

// awaitDelete waits until the delete of this session's previous node on the
// path is on the wire, so that our create queues behind it. TryAcquire
// does not wait through a disconnection: the lock counts as taken (by
// our own old node) until the delete can be sent.
func (l *Lock) awaitDelete(ctx context.Context, sent <-chan struct{}, wait bool) error {
	for {
		changed := l.s.stateChanged()
		if !wait && l.s.State() != StateConnected {
			select {
			case <-sent:
				return nil
			default:
				return errBusyDelete
			}
		}
		select { // microseconds while connected: the delete is being written
		case <-sent:
			return nil
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// errBusyDelete makes TryAcquire report false: our previous node is still
// queued.
var errBusyDelete = errors.New("zklock: previous node not yet deleted")

func res0Err(res []zk.MultiResponse) error {
	if len(res) == 0 {
		return nil
	}
	return res[0].Error
}

// abandon cleans up after a create that ctx gave up on: once the request
// completes, whatever it created is deleted, and when its outcome is
// unknown the queue is searched for our GUID until we know.
func (l *Lock) abandon(fin <-chan struct{}, guid string, created *string, owner *int64) {
	l.s.goBackground(func() {
		select {
		case <-fin:
		case <-l.s.hardStop:
			return
		}
		if *created != "" {
			l.s.deleteGuaranteed(*created, *owner)
			return
		}
		l.s.untilSessionOver(l.s.conn.SessionID(), func() (bool, error) {
			found, owner, err := l.findOwn(guid)
			if err == nil && found != "" {
				l.s.deleteGuaranteed(found, owner)
			}
			return err == nil, err
		})
	})
}

// findOwn looks for the node carrying guid under the lock path, and the
// session that owns it. It syncs first: a follower that has not applied
// our create yet would answer "not found", and a second create would then
// queue behind our own orphan.
func (l *Lock) findOwn(guid string) (node string, owner int64, err error) {
	if _, err := l.s.conn.Sync(l.path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "", 0, err
	}
	children, _, err := l.s.conn.Children(l.path)
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
	_, stat, err := l.s.conn.Exists(node)
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
	var mk func(p string) error
	mk = func(p string) error {
		_, err := l.s.conn.CreateContainer(p, nil, zk.FlagContainer, l.acl)
		if errors.Is(err, zk.ErrNoNode) && path.Dir(p) != "/" {
			if err := mk(path.Dir(p)); err != nil {
				return err
			}
			_, err = l.s.conn.CreateContainer(p, nil, zk.FlagContainer, l.acl)
		}
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	}
	return mk(l.path)
}

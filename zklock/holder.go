package zklock

// Who holds the lock, for a wait that ends without it: what the lock's
// acquisitions saw of the queue (the view the wait writes, wait.go, shared
// with the goroutines that wait behind the acquiring one, in package
// tier's gate), and, where that is not known to be current, one read of
// the queue's first node at the end of the failed wait. A successful
// acquisition sends nothing for it.

import (
	"context"
	"errors"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/session"
)

// readBound bounds the read that names the holder at the end of a failed
// wait of d, whose own context is over by then: a quarter of the wait,
// between 50 ms and a second. A server that answers takes milliseconds
// (two round trips); one that does not delays the error by at most this
// long, and the error says the holder was not read.
func readBound(d time.Duration) time.Duration {
	return min(max(d/4, 50*time.Millisecond), time.Second)
}

// ended notes that the acquisition is over: no node of ours is queued,
// and nothing keeps the holder current.
func (v *queueView) ended() {
	v.mu.Lock()
	v.node, v.ahead, v.standing = "", -1, false
	v.mu.Unlock()
}

// WaitEnded returns the WaitError of a wait for the lock, begun at start,
// that ended with err outside Acquire: in package tier's gate, where the
// goroutines of a process wait behind the one whose Acquire queues the
// process's node. It says what that node knows of the queue, as the
// WaitError of the Acquire would: the holder with its owner while the
// node watches it; otherwise, for a wait whose context ended (err matches
// context.Canceled or context.DeadlineExceeded), the queue's first node
// and its owner from one read (a getChildren and a getData, bounded by a
// quarter of the wait and a second, shared by the waits that end while it
// is in flight); and the outage, when the session had no connection, with
// the holder as last seen instead of a read. Ahead is our node's place
// while one is queued, -1 otherwise. It never returns nil.
func (l *Lock) WaitEnded(ctx context.Context, start time.Time, err error) *WaitError {
	if l == nil || ctx == nil {
		return &WaitError{Waited: time.Since(start), Ahead: -1, Err: err}
	}
	return l.explain(ctx, start, err)
}

// explain is the WaitError of a wait for l begun at start that ended with
// err (see WaitEnded).
func (l *Lock) explain(ctx context.Context, start time.Time, err error) *WaitError {
	e := &WaitError{Path: l.path, Waited: time.Since(start), Err: err, ended: time.Now()}
	sid := l.f.SessionID()
	node, current := l.view.describe(e, sid)
	if h := l.current(); h != nil && !h.isLost() {
		e.Ahead, e.Holder, e.Owner, e.ours = 0, path.Base(h.node), nil, true // held here: nothing to read
	}
	if l.f.Closed() {
		return e
	}
	if e.Outage = l.f.OutageSince(); !e.Outage.IsZero() {
		return e // what was seen before it: no read would be answered
	}
	if e.Ahead == 0 || current || !waitOver(err) || l.f.State() != session.StateConnected {
		return e
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readBound(e.Waited))
	defer cancel()
	e.read(l.readHolder(rctx, sid), node, sid)
	return e
}

// describe fills e with what the view saw: our node's place and the node
// it watched, and the holder as last seen in session, with its owner when
// read. It returns our node ("" when none is queued) and whether the
// holder is known to be current: ours watches it, and the watch stands.
func (v *queueView) describe(e *WaitError, session int64) (node string, current bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e.Ahead, e.Watched = v.ahead, v.watched
	if v.node == "" {
		e.Ahead = -1
	}
	if v.seenIn == session {
		e.Holder, e.Owner = v.holder, v.owner
	}
	return v.node, e.Owner != nil && v.standing && v.watched != nil && v.watched.Node == e.Holder
}

// read puts r, a read of the queue made as the wait ended, in e: the
// holder and its owner (ours when of session), and where it found our
// node if it is still there (its delete may not have gone out yet).
func (e *WaitError) read(r *holderRead, node string, session int64) {
	if r.err == nil || len(r.q) > 0 {
		e.Holder, e.Owner = "", nil
	}
	e.readErr, e.empty = r.err, r.err == nil && len(r.q) == 0
	if len(r.q) > 0 {
		e.Holder = r.q[0].name
	}
	if r.first != nil {
		e.Owner, e.ours = r.first, r.first.Owner != 0 && r.first.Owner == session
	}
	if node != "" {
		if i := position(r.q, path.Base(node), ""); i >= 0 {
			e.Ahead = i
		}
	}
}

// waitOver reports whether err is the end of the wait's context: a wait
// that was given up, whose holder is worth a read to name.
func waitOver(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// readHolder reads the queue and its first node, in session, or waits for
// the read in flight: a wait that ends while one is in flight is told what
// it returns, which was answered after that wait ended.
func (l *Lock) readHolder(ctx context.Context, session int64) *holderRead {
	v := &l.view
	v.mu.Lock()
	if r := v.reading; r != nil {
		v.mu.Unlock()
		select {
		case <-r.done:
			return r
		case <-ctx.Done():
			return &holderRead{err: ctx.Err()}
		}
	}
	r := &holderRead{done: make(chan struct{})}
	v.reading = r
	v.mu.Unlock()
	r.q, r.first, r.err = l.readFirst(ctx)
	v.mu.Lock()
	v.reading = nil
	if len(r.q) > 0 {
		v.sawHolderLocked(r.q[0].name, r.first, session) // the last seen, should an outage follow
	}
	v.mu.Unlock()
	close(r.done) // happens before the reads of r by the waits that joined
	return r
}

// readFirst lists the queue and reads its first node. A first node gone
// before its read (released meanwhile) makes it list once more.
func (l *Lock) readFirst(ctx context.Context) ([]entry, *Participant, error) {
	f := l.f
	var q []entry
	for range 2 {
		var children []string
		err := f.Flight().Send(ctx, func() error {
			c, _, err := f.Conn().Children(l.path)
			if err == nil {
				children = c
			}
			return err
		})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil, nil, nil // no lock path: nobody queued
		case err != nil:
			return nil, nil, err
		}
		if q = sortQueueBy(children, l.parse); len(q) == 0 {
			return q, nil, nil
		}
		var data []byte
		var st *zk.Stat
		err = f.Flight().Send(ctx, func() error {
			d, s, err := f.Conn().Get(l.path + "/" + q[0].name)
			if err == nil {
				data, st = d, s
			}
			return err
		})
		switch {
		case err == nil:
			return q, participantOf(q[0].name, data, st), nil
		case !errors.Is(err, zk.ErrNoNode):
			return q, nil, err
		}
	}
	return q, nil, nil // the queue moves faster than it reads: its last listing's first node, unread
}

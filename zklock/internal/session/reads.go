package session

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
)

// The locks' reads: a listing (List), a node's read with a data watch
// (Watch), a listing with a children watch (ListWatched). Each verb
// chooses its way here and always answers: with the session's other reads
// (lister.go: one multiRead, and one setWatches for their watches; a read
// joins them through lister.queue, here beside the verbs that call it) where
// the connection allows it, else go-zookeeper's request, written once for
// each kind (zkChildren, zkGetW), which the lister's own refusals use too.
// A watch's callback is registered here, before the read, so that no
// event after it is missed: the session's own (AddOwn, run again at the
// next connection, where the watch is gone) when the session sets the
// watch itself, else go-zookeeper's (Add). Under NewSession no callback
// is installed, and the event comes on Read.Events alone.

// A Read is a read's answer.
type Read struct {
	Children []string
	Data     []byte
	Stat     *zk.Stat
	// Events carries the watch's event where no callback tells it
	// (NewSession: go-zookeeper's channel); nil where the callback does.
	Events <-chan zk.Event
	// Unwatch removes the watch's callback (never nil; after an error,
	// already done).
	Unwatch func()
}

// List lists path, a listing Admit gave a place to (given back as it is
// answered).
func (s *Floor) List(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	if s.lister.on() {
		l, err := s.lister.queue(ctx, &listing{path: path})
		if err != nil {
			return nil, nil, err
		}
		return l.children, l.stat, nil
	}
	// Written by the request's goroutine, read only after Wait returned
	// nil (close(c.fin) happens before): on ctx's end the request may
	// still be running, and these must not be touched.
	var children []string
	var stat *zk.Stat
	err := s.flight.LaunchAdmitted(func() (err error) {
		children, stat, err = s.zkChildren(path, true)
		return err
	}).Wait(ctx)
	if err != nil {
		return nil, nil, err
	}
	return children, stat, nil
}

// Watch reads the node at path, its data and stat, and watches it, a read
// Admit gave a place to: fn (nil: none) is called with the watch's event,
// on go-zookeeper's event goroutine, and must not block. zk.ErrNoNode
// when the node is gone. traced: the read is a waiter's of its
// predecessor, which the trace records (the model's GETW); a hold's read
// of its own node is outside the model, and is not recorded.
func (s *Floor) Watch(ctx context.Context, path string, traced bool, fn func(zk.Event)) (Read, error) {
	own := s.ownWatches()
	r := Read{Unwatch: s.register(path, own, fn)}
	var err error
	if own {
		var l *listing
		if l, err = s.lister.queue(ctx, &listing{path: path, watch: true, untraced: !traced}); err == nil {
			r.Data, r.Stat = l.data, l.stat
		}
	} else {
		var data []byte
		var stat *zk.Stat
		var ev <-chan zk.Event
		err = s.flight.LaunchAdmitted(func() (err error) {
			data, stat, ev, err = s.zkGetW(path, traced)
			return err
		}).Wait(ctx)
		if err == nil {
			r.Data, r.Stat, r.Events = data, stat, s.eventsOf(ev)
		}
	}
	if err != nil {
		r.Unwatch()
		r.Unwatch = func() {}
	}
	return r, err
}

// ListWatched lists path and sets a children watch on it (any child
// created or deleted fires it), admitting the read itself: go-zookeeper's
// ChildrenW, whose watch fn (nil: none) is told as Watch's is.
func (s *Floor) ListWatched(ctx context.Context, path string, fn func(zk.Event)) (Read, error) {
	r := Read{Unwatch: s.register(path, false, fn)}
	var children []string
	var stat *zk.Stat
	var ev <-chan zk.Event
	err := s.flight.Send(ctx, func() (err error) {
		trace.Sent(s.zc, trace.OpChildrenW, path)
		children, stat, ev, err = s.zc.ChildrenW(path)
		trace.Listed(s.zc, trace.OpChildrenW, path, children, stat, err)
		return err
	})
	if err != nil {
		r.Unwatch()
		return Read{Unwatch: func() {}}, err
	}
	r.Children, r.Stat, r.Events = children, stat, s.eventsOf(ev)
	return r, nil
}

// queue queues l, a listing (or, with watch, a read and watch), and
// waits for its answer.
func (ls *lister) queue(ctx context.Context, l *listing) (*listing, error) {
	l.admitted, l.done = time.Now(), make(chan struct{})
	ls.mu.Lock()
	ls.waiting = append(ls.waiting, l)
	start := ls.senders < maxSenders
	if start {
		ls.senders++
	}
	ls.mu.Unlock()
	if start {
		ls.f.Go(ls.run)
	}
	select {
	case <-l.done:
		return l, l.err
	case <-ctx.Done():
		return nil, ctx.Err() // its place is given back when it is answered
	}
}

// register registers fn as the callback of the watch on path, the
// session's own when own, where the session's callback tells events;
// it returns what removes it.
func (s *Floor) register(path string, own bool, fn func(zk.Event)) (unwatch func()) {
	switch {
	case fn == nil || !s.watches.dispatching:
		return func() {}
	case own:
		return s.watches.AddOwn(path, fn)
	default:
		return s.watches.Add(path, fn)
	}
}

// eventsOf is Read.Events of a go-zookeeper watch's channel ev.
func (s *Floor) eventsOf(ev <-chan zk.Event) <-chan zk.Event {
	if s.watches.dispatching {
		return nil
	}
	return ev
}

// ownWatches reports whether Watch sets watches itself.
func (s *Floor) ownWatches() bool { return s.lister.on() && !s.lister.watchOff.Load() }

package election

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// recheck is how often Observe re-reads the queue although its watch has
// not fired: a watch can be lost when a server restarts (see
// zklock.WithRecheckInterval).
const recheck = 5 * time.Second

// Observe sends the value of each new leader, in the order they lead,
// starting with the current one, and is closed when ctx ends or the
// session is closed. It sends nothing while nobody leads. A reader slower
// than the changes skips the leaders it was too slow to see, never the
// current one. It keeps one children watch on the election's path (an
// exists watch while the path is missing) and, each time it fires (a
// candidate came or went) or every five seconds, lists the candidates
// (zklock.ListParticipants: a listing and one read per candidate). A nil
// Election or ctx gets a closed channel.
func (e *Election) Observe(ctx context.Context) <-chan string {
	ch := make(chan string)
	if e == nil || ctx == nil {
		close(ch)
		return ch
	}
	go e.observe(ctx, ch)
	return ch
}

func (e *Election) observe(ctx context.Context, ch chan<- string) {
	defer close(ch)
	var sent string // the node of the leader sent last
	var ev <-chan zk.Event
	for {
		wait := recheck
		if ev == nil {
			ev, wait = e.watchQueue()
		}
		if !e.sendLeader(ctx, ch, &sent) {
			return
		}
		select { // time.After's timer is collected unfired (Go 1.23)
		case <-ev:
			ev = nil // spent: watch afresh
		case <-time.After(wait):
			if wait == 0 {
				ev = nil
			}
		case <-ctx.Done():
			return
		case <-e.s.Done():
			return
		}
	}
}

// watchQueue sets the watch Observe waits on, before its listing (a change
// after the listing fires it), and says how long to wait at most. The
// watch is kept until it fires, since go-zookeeper keeps every watch
// channel until then.
func (e *Election) watchQueue() (ev <-chan zk.Event, wait time.Duration) {
	_, _, ev, err := e.s.Conn().ChildrenW(e.path)
	if errors.Is(err, zk.ErrNoNode) {
		var exists bool
		if exists, _, ev, err = e.s.Conn().ExistsW(e.path); exists {
			// Created meanwhile: that watch is on its data, not its
			// children; the next round sets the right one (this one
			// fires on deletion only).
			return ev, 0
		}
	}
	if err != nil { // the connection is down: again soon
		return nil, 100 * time.Millisecond
	}
	return ev, recheck
}

// sendLeader lists the candidates and sends the leader's value when the
// leader is not the one sent last; false when ctx ended first.
func (e *Election) sendLeader(ctx context.Context, ch chan<- string, sent *string) bool {
	ps, err := zklock.ListParticipants(ctx, e.s, e.path)
	if err != nil || len(ps) == 0 || ps[0].Node == *sent {
		return true
	}
	select {
	case ch <- value(ps[0].Data):
		*sent = ps[0].Node
		return true
	case <-ctx.Done():
		return false
	}
}

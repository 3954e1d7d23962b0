package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// runWatch prints PATH's queue at once and again each time its
// membership changes, until ctx ends (an interrupt: exit 0) or -count
// listings have been printed. A PATH with no lock nodes of its own but
// znodes below it is a root of locks: watchRoot follows every lock below
// it instead, and a PATH that becomes such a root while watched (it did
// not exist yet, say) switches to that.
//
// It sets a children watch (or, while the path does not exist, an exists
// watch) and lists the queue after the watch is set, so a change made
// after a listing fires the watch and is listed too: no change is missed
// for good, though several quick changes may show as one. Only a fired
// watch re-arms: go-zookeeper keeps one channel per watch call until it
// fires, so arming on a timer would pile them up. go-zookeeper re-sets
// watches when it reconnects into the same session, and on an expiry
// fires every watch with EventNotWatching, which re-arms here on the new
// session. Changes of a node's data (a revocation) are not watched.
//
// Cost per change: one getChildren with a watch (or exists), then
// ListParticipants: one getChildren and one getData per node, then two or
// three exists in flight together (readQueueStat).
func runWatch(ctx context.Context, c *cli, args []string) error {
	p, err := c.pathArg(args, false)
	if err != nil {
		return err
	}
	s, err := c.connect(ctx)
	if err != nil {
		return err
	}
	c.watching(s)
	return c.watchLock(ctx, p)
}

// watchLock is watch of a lock path (or of a path that does not exist).
func (c *cli) watchLock(ctx context.Context, p string) error {
	var last []zklock.Participant
	seen := seenHolders{}
	printed := 0
	for {
		kids, fired, err := c.arm(ctx, p, true)
		if err != nil {
			return unlessInterrupted(ctx, err)
		}
		if isRoot(kids) {
			if printed > 0 {
				fmt.Fprintf(c.stderr, "tierlock watch: %s has locks below it now: following them\n", p)
			}
			return c.watchRoot(ctx, p, printed)
		}
		ps, err := zklock.ListParticipants(ctx, c.s, p)
		if err != nil {
			return unlessInterrupted(ctx, err)
		}
		listed := time.Now()
		seen.note(p, ps, listed)
		if printed == 0 || !sameQueue(last, ps) {
			if err := c.printListing(ctx, p, ps, listed, seen); err != nil {
				return err
			}
			last = ps
			if printed++; c.count > 0 && printed >= c.count {
				return nil
			}
		}
		select {
		case <-fired:
		case <-ctx.Done():
			return nil
		}
	}
}

// unlessInterrupted returns err, or nil when ctx has ended: an interrupt
// ends a watch, with exit code 0.
func unlessInterrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// isRoot reports whether a znode with these children is a root of locks:
// no lock node of its own, and znodes below it that may be lock paths.
func isRoot(kids []string) bool {
	return len(kids) > 0 && !slices.ContainsFunc(kids, isLockNode)
}

// arm sets a watch that fires when p's children change, and returns them.
// When p does not exist it sets an exists watch, which fires when p is
// created, if orExists; else it returns zk.ErrNoNode. A lost connection is
// retried (go-zookeeper reconnects) until ctx ends.
func (c *cli) arm(ctx context.Context, p string, orExists bool) ([]string, <-chan zk.Event, error) {
	conn := c.s.Conn()
	for {
		kids, _, ch, err := conn.ChildrenW(p)
		if err == nil {
			return kids, ch, nil
		}
		if errors.Is(err, zk.ErrNoNode) && !orExists {
			return nil, nil, err
		}
		if !errors.Is(err, zk.ErrNoNode) {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			if errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrClosing) {
				return nil, nil, fmt.Errorf("watch %s: %w", p, err)
			}
			// A lost connection: go-zookeeper reconnects; try again.
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return nil, nil, err
			}
			continue
		}
		ok, _, ch, err := conn.ExistsW(p)
		if err == nil && !ok {
			return nil, ch, nil
		}
		if err != nil {
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return nil, nil, err
			}
		}
		// Created in between (or the exists failed): list again. An exists
		// watch on an existing node stays until its data changes; the
		// path's data never does.
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sameQueue reports whether two listings have the same nodes, holders and
// data.
func sameQueue(a, b []zklock.Participant) bool {
	return slices.EqualFunc(a, b, func(x, y zklock.Participant) bool {
		return x.Node == y.Node && x.Holder == y.Holder && string(x.Data) == string(y.Data)
	})
}

// printListing prints a listing ps of p, read at listed, with the stats
// that bound its holder's time and token, and what the watch saw of it.
func (c *cli) printListing(ctx context.Context, p string, ps []zklock.Participant, listed time.Time, seen seenHolders) error {
	st := c.readQueueStat(ctx, p, ps)
	now := time.Now()
	q := viewOf(p, ps, st, now)
	seen.bound(&q, listed, now)
	q.Time = &now
	return c.printing(func() error {
		if c.json {
			return printJSON(c.stdout, q)
		}
		if err := printQueues(c.stdout, []queueView{q}); err != nil {
			return err
		}
		_, err := fmt.Fprintln(c.stdout)
		return err
	})
}

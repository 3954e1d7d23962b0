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
// listings have been printed.
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
// ListParticipants: one getChildren and one getData per node.
func runWatch(ctx context.Context, c *cli, args []string) error {
	p, err := c.pathArg(args, false)
	if err != nil {
		return err
	}
	if _, err := c.connect(ctx); err != nil {
		return err
	}
	var last []zklock.Participant
	printed := 0
	for {
		fired, err := c.arm(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted
			}
			return err
		}
		ps, err := zklock.ListParticipants(ctx, c.s, p)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if printed == 0 || !sameQueue(last, ps) {
			if err := c.printListing(p, ps); err != nil {
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

// arm sets a watch that fires when p's children change, or when p is
// created while it does not exist.
func (c *cli) arm(ctx context.Context, p string) (<-chan zk.Event, error) {
	conn := c.s.Conn()
	for {
		_, _, ch, err := conn.ChildrenW(p)
		if err == nil {
			return ch, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrClosing) {
				return nil, fmt.Errorf("watch %s: %w", p, err)
			}
			// A lost connection: go-zookeeper reconnects; try again.
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return nil, err
			}
			continue
		}
		ok, _, ch, err := conn.ExistsW(p)
		if err == nil && !ok {
			return ch, nil
		}
		if err != nil {
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return nil, err
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

func (c *cli) printListing(p string, ps []zklock.Participant) error {
	now := time.Now()
	q := viewOf(p, ps, now)
	q.Time = &now
	if c.json {
		return printJSON(c.stdout, q)
	}
	if err := printQueues(c.stdout, []queueView{q}); err != nil {
		return err
	}
	_, err := fmt.Fprintln(c.stdout)
	return err
}

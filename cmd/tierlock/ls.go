package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// runLs lists the lock paths under ROOT (ROOT itself included) with their
// queues. A lock path is a znode with lock nodes among its children; the
// walk does not descend into lock nodes (ephemeral, childless) nor into
// /zookeeper. Cost: one getChildren per znode under ROOT, plus one
// getChildren and one getData per lock node for each lock path found
// (ListParticipants).
func runLs(ctx context.Context, c *cli, args []string) error {
	root, err := c.pathArg(args, true)
	if err != nil {
		return err
	}
	if _, err := c.connect(ctx); err != nil {
		return err
	}
	rctx, cancel := c.requestContext(ctx)
	defer cancel()
	paths, err := c.lockPaths(rctx, root)
	if err != nil {
		return err
	}
	now := time.Now()
	qs := make([]queueView, 0, len(paths))
	for _, p := range paths {
		ps, err := zklock.ListParticipants(rctx, c.s, p)
		if err != nil {
			return err
		}
		if len(ps) == 0 {
			continue // emptied since the walk saw it
		}
		qs = append(qs, viewOf(p, ps, now))
	}
	if c.json {
		return printJSON(c.stdout, struct {
			Root  string      `json:"root"`
			Locks []queueView `json:"locks"`
		}{root, qs})
	}
	if len(qs) == 0 {
		_, err := fmt.Fprintf(c.stdout, "no locks under %s\n", root)
		return err
	}
	return printQueues(c.stdout, qs)
}

// lockPaths walks the tree under root, depth first in name order, and
// returns the znodes that have lock nodes among their children. A missing
// root is zk.ErrNoNode; a znode that vanishes during the walk is skipped.
func (c *cli) lockPaths(ctx context.Context, root string) ([]string, error) {
	var out []string
	var walk func(p string, top bool) error
	walk = func(p string, top bool) error {
		if p == "/zookeeper" {
			return nil
		}
		kids, err := children(ctx, c.s.Conn(), p)
		if errors.Is(err, zk.ErrNoNode) && !top {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", p, err)
		}
		slices.Sort(kids)
		if slices.ContainsFunc(kids, isLockNode) {
			out = append(out, p)
		}
		for _, k := range kids {
			if isLockNode(k) {
				continue
			}
			if err := walk(path.Join(p, k), false); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(root, true)
}

// children reads p's children, giving up when ctx ends.
func children(ctx context.Context, conn *zk.Conn, p string) ([]string, error) {
	return await(ctx, func() ([]string, error) {
		kids, _, err := conn.Children(p)
		return kids, err
	})
}

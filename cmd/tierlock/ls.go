package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/await"
	"github.com/tierlock/tierlock/zklock"
)

// runLs lists the lock paths under ROOT (ROOT itself included). A lock
// path is a znode with lock nodes among its children; the walk does not
// descend into lock nodes (ephemeral, childless) nor into /zookeeper.
//
// A ROOT that is itself a lock path, or -l, shows every node of every
// queue, holder first. Any other ROOT (a registry's root, a directory of
// locks) shows one line per lock, in natural order (job-2 before
// job-10): how long its holder has held it and since it queued, its
// token, the processes waiting, the holder; then a legend and a total: a
// root of 149 held keys is 155 lines, not 600.
//
// A node whose session no server lists among its connections is marked
// (sessions.go): its process may be gone, its nodes stay until the
// session expires.
//
// Cost: one getChildren per znode under ROOT, plus for each lock path
// found one getChildren and one getData per lock node (ListParticipants),
// then two or three exists per lock, all in flight together
// (readQueueStats); when there are locks, the four-letter words conf (of
// one server) and cons (of each).
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
	paths, runs, err := c.lockPaths(rctx, root)
	if err != nil {
		return err
	}
	qs, err := c.queues(rctx, paths)
	if err != nil {
		return err
	}
	if len(qs) > 0 {
		c.connectedSessions(rctx).mark(qs)
	}
	if c.long || (len(paths) > 0 && paths[0] == root) {
		return c.printLong(root, qs)
	}
	js, err := c.jobs(rctx, root, runs)
	if err != nil {
		return err
	}
	ls := summaries(root, qs)
	if c.json {
		return printJSON(c.stdout, struct {
			Root  string        `json:"root"`
			Locks []lockSummary `json:"locks"`
			Total totals        `json:"total"`
			Jobs  []jobView     `json:"jobs,omitempty"`
		}{root, ls, sum(ls), js})
	}
	switch {
	case len(ls) == 0 && len(js) == 0:
		_, err := fmt.Fprintf(c.stdout, "no locks under %s\n", root)
		return err
	case len(ls) == 0:
		return printJobs(c.stdout, js)
	}
	if err := printSummaries(c.stdout, ls); err != nil {
		return err
	}
	return printLsJobs(c.stdout, js)
}

// queues lists the queue of each lock path, with the stats that bound its
// holder's time and token; paths emptied since the walk saw them are left
// out.
func (c *cli) queues(ctx context.Context, paths []string) ([]queueView, error) {
	var held []string
	var lists [][]zklock.Participant
	for _, p := range paths {
		ps, err := zklock.ListParticipants(ctx, c.s, p)
		if err != nil {
			return nil, err
		}
		if len(ps) > 0 {
			held, lists = append(held, p), append(lists, ps)
		}
	}
	sts := c.readQueueStats(ctx, held, lists) // all at once, after every listing
	now := time.Now()
	qs := make([]queueView, 0, len(held))
	for i, p := range held {
		qs = append(qs, viewOf(p, lists[i], sts[i], now))
	}
	return qs, nil
}

// printLong is ls's per-node form: every queue, holder first.
func (c *cli) printLong(root string, qs []queueView) error {
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

// lockPaths walks the tree under root, depth first in natural order
// (naturalCompare: the order comparePaths gives the paths), and
// returns the znodes that have lock nodes among their children, and the
// runonce run nodes it met (jobs.go). A missing root is zk.ErrNoNode;
// a znode that vanishes during the walk is skipped.
func (c *cli) lockPaths(ctx context.Context, root string) (locks, runs []string, err error) {
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
		slices.SortFunc(kids, naturalCompare)
		if slices.ContainsFunc(kids, isLockNode) {
			out = append(out, p)
		}
		for _, k := range kids {
			if isLockNode(k) {
				continue
			}
			if isRunNode(k) { // a candidate, kept if its data is a run record
				runs = append(runs, path.Join(p, k))
			}
			if err := walk(path.Join(p, k), false); err != nil {
				return err
			}
		}
		return nil
	}
	err = walk(root, true)
	return out, runs, err
}

// children reads p's children, giving up when ctx ends.
func children(ctx context.Context, conn *zk.Conn, p string) ([]string, error) {
	return await.Call(ctx, func() ([]string, error) {
		kids, _, err := conn.Children(p)
		return kids, err
	})
}

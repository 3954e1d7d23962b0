package main

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// runBreak deletes a stuck node: the node of PATH's holder, or NODE. It
// refuses without -yes (exit 2), and refuses a PATH that several readers
// hold (name the NODE). The holder, if alive, is told (zklock reports
// ErrNodeDeleted) but may be mid-work: this breaks mutual exclusion for
// the rest of that work unless the resource checks fencing tokens. Cost:
// ListParticipants for a PATH (or one getData for a NODE), then one
// delete. Deleting a node needs DELETE permission on its parent, the lock
// path.
func runBreak(ctx context.Context, c *cli, args []string) error {
	arg, err := c.oneArg(args)
	if err != nil {
		return err
	}
	tg, err := parseTarget(arg)
	if err != nil {
		return err
	}
	if !c.yes {
		return fmt.Errorf("%w: break deletes %s's node and hands the lock on while its holder may still be working; add -yes to confirm", errUsage, arg)
	}
	if _, err := c.connect(ctx); err != nil {
		return err
	}
	rctx, cancel := c.requestContext(ctx)
	defer cancel()
	var victim zklock.Participant
	if tg.node == "" {
		hs, err := c.holders(rctx, tg.lockPath)
		if err != nil {
			return err
		}
		if len(hs) > 1 {
			return fmt.Errorf("%w: %d readers hold %s; name the NODE to delete", errUsage, len(hs), tg.lockPath)
		}
		victim = hs[0]
	} else {
		ps, err := zklock.ListParticipants(rctx, c.s, tg.lockPath)
		if err != nil {
			return err
		}
		i := -1
		for j, p := range ps {
			if p.Node == path.Base(tg.node) {
				i = j
			}
		}
		if i < 0 {
			return fmt.Errorf("%s: %w", tg.node, zk.ErrNoNode)
		}
		victim = ps[i]
	}
	node := tg.lockPath + "/" + victim.Node
	if err := deleteNode(rctx, c.s.Conn(), node); err != nil {
		return err
	}
	v := viewOf(tg.lockPath, []zklock.Participant{victim}, time.Now()).Nodes[0]
	if c.json {
		return printJSON(c.stdout, struct {
			Deleted nodeView `json:"deleted"`
		}{v})
	}
	state := "waiting"
	if v.Holder {
		state = "holding"
	}
	_, err = fmt.Fprintf(c.stdout, "deleted %s (%s, session %s, %s)\n", node, state, v.Session, v.who())
	return err
}

// deleteNode deletes node, giving up when ctx ends.
func deleteNode(ctx context.Context, conn *zk.Conn, node string) error {
	errc := make(chan error, 1)
	go func() { errc <- conn.Delete(node, -1) }()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("delete %s: %w", node, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("delete %s: %w", node, ctx.Err())
	}
}

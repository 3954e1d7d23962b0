package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/await"
	"github.com/tierlock/tierlock/zklock"
)

// runBreak deletes a stuck node: the node of PATH's holder, or NODE. It
// refuses without -yes (exit 2), and refuses a PATH that several readers
// hold (name the NODE). The holder, if alive, is told (zklock reports
// ErrNodeDeleted) but may be mid-work: this breaks mutual exclusion for
// the rest of that work unless the resource checks fencing tokens. Cost:
// ListParticipants on the lock path, then one delete (DELETE permission
// on the lock path, the node's parent, is what the ACL checks). The node
// deleted is the one listed, by name: a holder that released in between
// is not replaced by its successor, the delete finds nothing (exit 5).
func runBreak(ctx context.Context, c *cli, args []string) error {
	tg, err := c.targetArg(args)
	if err != nil {
		return err
	}
	if !c.yes {
		return fmt.Errorf("%w: break deletes %s's node and hands the lock on while its holder may still be working; add -yes to confirm", errUsage, args[0])
	}
	rctx, cancel := c.requestContext(ctx)
	defer cancel()
	ps, err := c.nodesOf(rctx, tg)
	if err != nil {
		return err
	}
	if len(ps) > 1 {
		return fmt.Errorf("%w: %d readers hold %s; name the NODE to delete", errUsage, len(ps), tg.lockPath)
	}
	victim := ps[0]
	node := tg.lockPath + "/" + victim.Node
	if err := deleteNode(rctx, c.s.Conn(), node); err != nil {
		return err
	}
	v := viewOf(tg.lockPath, []zklock.Participant{victim}, queueStat{}, time.Now()).Nodes[0]
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
	_, err := await.Call(ctx, func() (struct{}, error) { return struct{}{}, conn.Delete(node, -1) })
	if err != nil {
		return fmt.Errorf("delete %s: %w", node, err)
	}
	return nil
}

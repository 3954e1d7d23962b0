package main

import (
	"context"
	"fmt"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// runRevoke asks the holder of PATH (each holder, when readers share it),
// or NODE, to release: Curator's revocation protocol, the message
// __REVOKE__ written into the node's data. A holder that watches its node
// for it (Curator's makeRevocable, tierlock's WithRevocable) releases; one
// that does not keeps holding. The node's data (host, pid, label) is
// overwritten. Cost: ListParticipants on the lock path, then one setData
// per node.
func runRevoke(ctx context.Context, c *cli, args []string) error {
	tg, err := c.targetArg(args)
	if err != nil {
		return err
	}
	rctx, cancel := c.requestContext(ctx)
	defer cancel()
	ps, err := c.nodesOf(rctx, tg)
	if err != nil {
		return err
	}
	type revoked struct {
		Node string    `json:"node"`
		Time time.Time `json:"time"`
	}
	var done []revoked
	for _, p := range ps {
		n := tg.lockPath + "/" + p.Node
		if err := zklock.RevokeNode(rctx, c.s, n); err != nil {
			return err
		}
		done = append(done, revoked{n, time.Now().UTC()})
		if !c.json {
			fmt.Fprintf(c.stdout, "revocation requested: %s\n", n)
		}
	}
	if c.json {
		return printJSON(c.stdout, struct {
			Revoked []revoked `json:"revoked"`
		}{done})
	}
	return nil
}

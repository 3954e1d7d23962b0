package main

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// What the subcommands act on: a lock path, or a node in it, read from
// the command line and resolved against the queue.

// target is what revoke and break act on: a lock path, or one node in it.
type target struct {
	lockPath string
	node     string // full path of the node, or "" for the path's holder
}

// parseTarget reads PATH|NODE: a path whose last segment is a lock node's
// name (any family, or a lease) is a node, anything else a lock path.
func parseTarget(arg string) (target, error) {
	if err := zklock.ValidatePath(arg); err != nil {
		return target{}, err
	}
	if isLockNode(path.Base(arg)) {
		return target{lockPath: path.Dir(arg), node: arg}, nil
	}
	return target{lockPath: arg}, nil
}

// isLockNode reports whether name is a lock node of some recipe.
func isLockNode(name string) bool {
	_, _, ok := zklock.ParseNode(name)
	return ok
}

// errNoHolder reports a lock path nobody holds.
var errNoHolder = errors.New("nobody holds it")

// pathArg reads the single ROOT|PATH argument of ls and watch; root
// allows "/" (ls walks the whole tree; watch would watch every znode). A lock node is refused with a pointer to its path.
func (c *cli) pathArg(args []string, root bool) (string, error) {
	p, err := c.oneArg(args)
	if err != nil || (root && p == "/") {
		return p, err
	}
	if err := zklock.ValidatePath(p); err != nil {
		if p == "/" {
			err = fmt.Errorf("%w (%s follows a lock, or the locks below a root such as /app/jobs, not the whole tree: a watch on every znode)", err, c.name)
		}
		return "", err
	}
	if isLockNode(path.Base(p)) {
		return "", fmt.Errorf("%w: %s is a lock node; %s wants its lock path, %s", errUsage, p, c.name, path.Dir(p))
	}
	return p, nil
}

// targetArg reads the single PATH|NODE argument of revoke and break.
func (c *cli) targetArg(args []string) (target, error) {
	arg, err := c.oneArg(args)
	if err != nil {
		return target{}, err
	}
	return parseTarget(arg)
}

// nodesOf connects and returns the nodes tg names: NODE itself, or the
// holders of PATH (every reader no writer precedes, for read/write locks).
// A NODE that is not in its queue is zk.ErrNoNode; a PATH nobody holds,
// errNoHolder. Cost: ListParticipants on the lock path.
func (c *cli) nodesOf(ctx context.Context, tg target) ([]zklock.Participant, error) {
	if _, err := c.connect(ctx); err != nil {
		return nil, err
	}
	ps, err := zklock.ListParticipants(ctx, c.s, tg.lockPath)
	if err != nil {
		return nil, err
	}
	var out []zklock.Participant
	for _, p := range ps {
		if (tg.node == "" && p.Holder) || (tg.node != "" && tg.lockPath+"/"+p.Node == tg.node) {
			out = append(out, p)
		}
	}
	switch {
	case len(out) > 0:
		return out, nil
	case tg.node != "":
		return nil, fmt.Errorf("%s: %w", tg.node, zk.ErrNoNode)
	}
	return nil, fmt.Errorf("%s: %w", tg.lockPath, errNoHolder)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/await"
	"github.com/tierlock/tierlock/zklock"
)

// runCreate creates the chroot that -zk names (host:port/myapp), and PATH
// below it when given, with their missing parents: the step a chroot
// needs before any client can use it (zklock.Connect, the Java client and
// kazoo refuse a missing one), without ZooKeeper's zkCli.sh, which
// Debian's package keeps off PATH. The znodes are persistent, with an
// open ACL as zkCli.sh's create gives them, or, with -digest, all
// permissions for that identity and read for the world (a fleet's root:
// docs/operations.md). A znode that exists is left as it is. Cost: one
// create per segment.
func runCreate(ctx context.Context, c *cli, args []string) error {
	hosts, chroot := splitChroot(c.servers)
	var p string
	switch len(args) {
	case 0:
	case 1:
		if err := zklock.ValidatePath(args[0]); err != nil {
			return err
		}
		p = args[0]
	default:
		return fmt.Errorf("%w: one argument expected, got %q", errUsage, args)
	}
	if chroot == "" && p == "" {
		return fmt.Errorf("%w: nothing to create: give PATH, or a chroot in -zk (host:port/myapp)", errUsage)
	}
	full := strings.TrimSuffix(chroot+p, "/")
	if err := zklock.ValidatePath(full); err != nil {
		return err
	}
	c.servers = hosts // the chroot may not exist yet: connect without it
	if _, err := c.connect(ctx); err != nil {
		return err
	}
	rctx, cancel := c.requestContext(ctx)
	defer cancel()
	created, err := c.createAll(rctx, full)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.stdout, struct {
			Path    string `json:"path"`
			Created bool   `json:"created"`
		}{full, created})
	}
	if created {
		_, err = fmt.Fprintf(c.stdout, "created %s\n", full)
	} else {
		_, err = fmt.Fprintf(c.stdout, "%s exists\n", full)
	}
	return err
}

// splitChroot splits -zk's servers from the chroot after the last (or on
// an entry of its own, as kazoo's lists allow); it does not check them:
// zklock.Connect does.
func splitChroot(servers string) (hosts, chroot string) {
	var kept []string
	for _, s := range strings.Split(servers, ",") {
		host, root, ok := strings.Cut(strings.TrimSpace(s), "/")
		if ok {
			chroot = "/" + root
		}
		if host != "" {
			kept = append(kept, host)
		}
	}
	return strings.Join(kept, ","), chroot
}

// createAll creates p and its missing parents, and reports whether p was
// created (false: it existed).
func (c *cli) createAll(ctx context.Context, p string) (bool, error) {
	acl := zk.WorldACL(zk.PermAll)
	if c.digest != "" {
		acl = append(zk.AuthACL(zk.PermAll), zk.WorldACL(zk.PermRead)...)
	}
	conn := c.s.Conn()
	created := false
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		_, err := await.Call(ctx, func() (string, error) { return conn.Create(p[:i], nil, 0, acl) })
		switch {
		case err == nil:
			created = i == len(p)
		case errors.Is(err, zk.ErrNodeExists):
			created = false
		default:
			return false, fmt.Errorf("create %s: %w", p[:i], err)
		}
	}
	return created, nil
}

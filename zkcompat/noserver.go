package zkcompat

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// With no server to reach, zk.Lock's Lock fails: its first request (the
// create of its node) waits in go-zookeeper's send queue, and go-zookeeper
// fails every request waiting there with zk.ErrNoServer each time it has
// tried every server in turn without connecting (then it pauses a second
// and starts again). A zklock session over such a connection would wait
// for it for ever instead, so a Lock that finds the connection without a
// session first sends a request of its own through it, as zk.Lock would,
// and gives up as zk.Lock does when go-zookeeper fails that request.

// reachable returns nil once conn has reached a server: at once when it
// has a session, else when a probe (an exists of path: it sets no watch
// and writes nothing; any answer of a server will do) is answered. It
// returns an error wrapping zk.ErrNoServer when go-zookeeper failed the
// probe because no server could be reached, and ctx's error when ctx ends
// first (the probe, which cannot be withdrawn, then ends on its own when
// go-zookeeper answers or fails it). Any other outcome is left to the
// acquisition: a closed connection fails it at once, a connection lost
// while the probe was out is retried.
func reachable(ctx context.Context, conn *zk.Conn, path string) error {
	if conn.State() == zk.StateHasSession {
		return nil
	}
	probe := make(chan error, 1)
	go func() {
		_, _, err := conn.Exists(path)
		probe <- err
	}()
	select {
	case err := <-probe:
		if errors.Is(err, zk.ErrNoServer) {
			return fmt.Errorf("zkcompat: lock %s: %w", path, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

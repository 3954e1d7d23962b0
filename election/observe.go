package election

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// recheck is how often Observe re-reads the queue although its watch has
// not fired: a watch can be lost when a server restarts (see
// zklock.WithRecheckInterval).
const recheck = 5 * time.Second

// read lists the queue and reads the leader's node, unless it is keep
// (its data never changes), and returns a channel that fires when the
// leader may have changed: a data watch on the leader's node (nil when it
// is keep: the caller's watch on it stands), or, with no leader, a
// children watch on the path (an exists watch while the path is missing).
func (e *Election) read(keep string) (node, v string, ev <-chan zk.Event, err error) {
	conn := e.s.Conn()
	for {
		children, _, err := conn.Children(e.path)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return "", "", nil, err
		}
		if node = first(children); node == keep && node != "" {
			return node, "", nil, nil
		}
		if node == "" {
			children, _, ev, err = conn.ChildrenW(e.path)
			if errors.Is(err, zk.ErrNoNode) {
				var ok bool
				if ok, _, ev, err = conn.ExistsW(e.path); err == nil && ok {
					continue // created meanwhile: list again
				}
			}
			if err != nil || first(children) == "" {
				return "", "", ev, errors.Join(err, ErrNoLeader)
			}
			continue // one came meanwhile (the watch fires when the next one does)
		}
		data, _, ev, err := conn.GetW(e.path + "/" + node)
		if errors.Is(err, zk.ErrNoNode) {
			continue // it went meanwhile
		}
		return node, value(data), ev, err
	}
}

// first returns the name of the first contender in children, in zklock's
// queue order (sequence, wrapping), or "".
func first(children []string) (name string) {
	var seq int32
	for _, c := range children {
		if _, s, ok := zklock.Contender(c); ok && (name == "" || int32(uint32(seq)-uint32(s)) > 0 || (s == seq && c < name)) {
			name, seq = c, s
		}
	}
	return name
}

// Observe sends the value of each new leader, in the order they lead,
// starting with the current one, and is closed when ctx ends or the
// session is closed. It sends nothing while nobody leads. A reader slower
// than the changes skips the leaders it was too slow to see, never the
// current one. Per leader it costs two requests and one data watch on the
// leader's node (a children watch on the path while nobody leads), plus a
// listing every five seconds. A nil Election or ctx gets a closed channel.
func (e *Election) Observe(ctx context.Context) <-chan string {
	ch := make(chan string)
	if e == nil || ctx == nil {
		close(ch)
		return ch
	}
	go e.observe(ctx, ch)
	return ch
}

func (e *Election) observe(ctx context.Context, ch chan<- string) {
	defer close(ch)
	var sent string    // the leader sent last
	var watched string // the leader whose node ev watches ("": ev, if any, is on the path)
	var ev <-chan zk.Event
	for {
		node, v, w, err := e.read(watched)
		wait := recheck
		switch {
		case err == nil:
			if node != watched {
				watched, ev = node, w
			}
			if node != sent {
				select {
				case ch <- v:
				case <-ctx.Done():
					return
				}
				sent = node
			}
		case errors.Is(err, ErrNoLeader) && w != nil:
			watched, ev = "", w
		default: // a failed request (the connection is down): again soon
			watched, ev, wait = "", nil, 100*time.Millisecond
		}
		select { // time.After's timer is collected unfired (Go 1.23)
		case <-ev:
			watched, ev = "", nil // spent: read and watch afresh
		case <-time.After(wait):
		case <-ctx.Done():
			return
		case <-e.s.Done():
			return
		}
	}
}

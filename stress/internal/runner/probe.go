package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Limits are the physical limits of a lock on the servers of a run,
// measured right after each implementation's run on the same servers
// (warm, and quiet once the run's sessions have ended):
//
//   - Pairs: awaited ephemeral create + delete pairs per second on one
//     connection, the cost of an uncontended acquire and release;
//   - Chains: hand-off links per second, the critical path of every FIFO
//     lock on one contended path: a holder's delete is committed, the
//     waiter watching that node gets its event and lists the children
//     once. Two sessions take turns holding and watching; only the links
//     are timed (a client queues its next node and watch while the other
//     holds, as waiters queued long before would have done).
type Limits struct {
	Pairs   float64 `json:"create_delete_pairs_per_s"`
	Chains  float64 `json:"handoff_chain_per_s"`
	Seconds float64 `json:"probe_s"` // each probe's length
	Err     string  `json:"error,omitempty"`
}

// probe measures the limits on the servers of worker slot 0 under dir,
// each probe for d.
func (r *Runner) probe(ctx context.Context, dir string, d time.Duration) *Limits {
	lim := &Limits{Seconds: d.Seconds()}
	a, closeA, err := r.dial(ctx)
	if err != nil {
		lim.Err = err.Error()
		return lim
	}
	defer closeA()
	b, closeB, err := r.dial(ctx)
	if err != nil {
		lim.Err = err.Error()
		return lim
	}
	defer closeB()
	if err := r.makePaths([]string{dir}); err != nil {
		lim.Err = err.Error()
		return lim
	}
	defer deleteTree(r.conn, dir)
	// A quarter of d unmeasured first: the server's JIT and caches settle.
	if _, err = pairs(ctx, a, dir, d/4); err == nil {
		lim.Pairs, err = pairs(ctx, a, dir, d)
	}
	if err == nil {
		lim.Chains, err = chains(ctx, [2]*zk.Conn{a, b}, dir, d)
	}
	if err != nil {
		lim.Err = err.Error()
	}
	return lim
}

// dial opens a connection of its own to the servers of worker slot 0 and
// waits for its session.
func (r *Runner) dial(ctx context.Context) (*zk.Conn, func(), error) {
	conn, events, err := zk.Connect(r.workerServers(0), r.cfg.SessionTimeout,
		zk.WithLogInfo(false), zk.WithLogger(discardLogger{}))
	if err != nil {
		return nil, nil, err
	}
	var wg sync.WaitGroup
	ready := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		var once sync.Once
		for ev := range events {
			if ev.State == zk.StateHasSession {
				once.Do(func() { close(ready) })
			}
		}
	}()
	closeFn := func() { conn.Close(); wg.Wait() }
	select {
	case <-ready:
		return conn, closeFn, nil
	case <-time.After(r.cfg.ConnectTimeout):
		closeFn()
		return nil, nil, fmt.Errorf("probe: no session within %v", r.cfg.ConnectTimeout)
	case <-ctx.Done():
		closeFn()
		return nil, nil, ctx.Err()
	}
}

var acl = zk.WorldACL(zk.PermAll)

// pairs is awaited ephemeral create + delete pairs per second on conn.
func pairs(ctx context.Context, conn *zk.Conn, dir string, d time.Duration) (float64, error) {
	start := time.Now()
	n := 0
	for time.Since(start) < d && ctx.Err() == nil {
		p, err := conn.Create(dir+"/pair-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			return 0, fmt.Errorf("probe: create: %w", err)
		}
		if err := conn.Delete(p, -1); err != nil {
			return 0, fmt.Errorf("probe: delete: %w", err)
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// chains is hand-off links per second between two sessions: each link
// from the holder's delete to the end of the waiter's getChildren, which
// the waiter sends on its watch event.
func chains(ctx context.Context, c [2]*zk.Conn, dir string, d time.Duration) (float64, error) {
	var node [2]string
	for i := range c {
		p, err := c[i].Create(dir+"/chain-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			return 0, fmt.Errorf("probe: create: %w", err)
		}
		node[i] = p
	}
	holder := 0
	var timed time.Duration
	links := 0
	for timed < d && ctx.Err() == nil {
		waiter := 1 - holder
		_, _, ev, err := c[waiter].GetW(node[holder])
		if err != nil {
			return 0, fmt.Errorf("probe: watch: %w", err)
		}
		t0 := time.Now()
		deleted := make(chan error, 1)
		go func(conn *zk.Conn, p string) { deleted <- conn.Delete(p, -1) }(c[holder], node[holder])
		if err := awaitDeleted(ev, deleted); err != nil {
			return 0, err
		}
		if _, _, err := c[waiter].Children(dir); err != nil {
			return 0, fmt.Errorf("probe: getChildren: %w", err)
		}
		timed += time.Since(t0)
		links++
		if err := <-deleted; err != nil {
			return 0, fmt.Errorf("probe: delete: %w", err)
		}
		// The old holder queues again behind the new one.
		p, err := c[holder].Create(dir+"/chain-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			return 0, fmt.Errorf("probe: create: %w", err)
		}
		node[holder] = p
		holder = waiter
	}
	if links == 0 {
		return 0, errors.New("probe: no link measured")
	}
	return float64(links) / timed.Seconds(), nil
}

// awaitDeleted waits for the watch event of a deleted node; a failed
// delete (reported on deleted, and put back for the caller) or a silence
// of 30s ends the wait with an error.
func awaitDeleted(ev <-chan zk.Event, deleted chan error) error {
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case e := <-ev:
			if e.Type != zk.EventNodeDeleted {
				return fmt.Errorf("probe: event %v on %s", e.Type, e.Path)
			}
			return nil
		case err := <-deleted:
			deleted <- err
			if err != nil {
				return fmt.Errorf("probe: delete: %w", err)
			}
			deleted = nil // the delete is done: only the event is awaited now
		case <-timeout.C:
			return errors.New("probe: no watch event within 30s of a delete")
		}
	}
}

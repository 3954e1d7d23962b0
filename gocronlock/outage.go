package gocronlock

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// outage keeps ZooKeeper's unavailability, as Lock sees it, to two log
// lines per Locker: one when a Lock first fails to reach ZooKeeper, one
// when a Lock reaches it again, with how long and how many runs were
// skipped meanwhile (issue 39, item 3: one warning per job and tick was
// 15 lines a second for a fleet of 3 × 10 jobs). Other failures are
// warned of at most once a minute per job (job.warnedAt).
type outage struct {
	mu      sync.Mutex
	down    bool
	since   time.Time
	skipped int64
}

// failure notes a Lock that failed with err; ctx is the caller's (not
// Lock's own deadline). It reports whether err is ZooKeeper's
// unavailability, which the outage's two lines cover.
func (l *Locker) failure(ctx context.Context, err error) bool {
	if !l.unreachable(ctx, err) {
		return false
	}
	o := &l.out
	o.mu.Lock()
	first := !o.down
	if first {
		o.down, o.since, o.skipped = true, time.Now(), 0
	}
	o.skipped++
	o.mu.Unlock()
	if first {
		l.log.Warn("ZooKeeper unreachable: runs are skipped until it answers", "state", l.s.State(), "err", err)
	}
	return true
}

// reached notes a Lock that ZooKeeper answered.
func (l *Locker) reached() {
	o := &l.out
	o.mu.Lock()
	was, since, skipped := o.down, o.since, o.skipped
	o.down = false
	o.mu.Unlock()
	if was {
		l.log.Warn("ZooKeeper reachable again", "down_for", time.Since(since).Round(time.Millisecond), "runs_skipped", skipped)
	}
}

// unreachable reports whether err says that ZooKeeper did not answer: the
// session is not connected, Lock's own deadline passed (ctx, the caller's,
// is live), or the error is a connection's.
func (l *Locker) unreachable(ctx context.Context, err error) bool {
	if l.s.State() != zklock.StateConnected {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return true
	}
	for _, e := range []error{zk.ErrConnectionClosed, zk.ErrNoServer, zk.ErrSessionExpired, zk.ErrClosing,
		zklock.ErrDisconnected, zklock.ErrSessionExpired, zklock.ErrLeaseExpired, zklock.ErrOutcomeUnknown} {
		if errors.Is(err, e) {
			return true
		}
	}
	var op *net.OpError
	return errors.As(err, &op)
}

package runonce

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/hostclock"
	"github.com/tierlock/tierlock/zklock"
)

// probe is one Claim call's own state: the tick it claims, and its
// requests, followed to tell, when the Claim fails on its deadline,
// whether ZooKeeper was silent (an outage) or answered too late
// (overload: this process, or the server, slow).
type probe struct {
	entry   time.Time // Claim's entry: the timer's firing, as near as the Runner knows it
	pending int64     // the send of the request being waited for (heard's clock); 0: none
	entered bool      // admitted to writing (gate.go)
	tick    time.Time // the tick's scheduled time (ClaimTick); zero: not known
	// name is the tick's name (ms), 0 without one; lateBy its lateness, 0
	// when on time; window the window of the claim's job, its period for
	// ClaimEvery.
	name   int64
	lateBy time.Duration
	window time.Duration
}

// newProbe returns the probe of a Claim entered at entry, of tick (zero:
// none) of a job of window w, or of period every (not zero: ClaimEvery).
func newProbe(entry, tick time.Time, every, w time.Duration) *probe {
	if every > 0 {
		w = every
	}
	return &probe{entry: entry, tick: tick, window: w}
}

// staleFloor is the least lateness that makes a tick late, for a job
// whose window is shorter (a fleet outside the envelope already): a
// timer's ordinary lag is not a replay.
const staleFloor = 100 * time.Millisecond

// named notes p's tick: its name, and its lateness on this host's clock
// (the claim's entry less the tick, both wall-clock readings of this
// host). It reports whether p has a tick, on time (which ends an episode
// of stale ticks).
func (p *probe) named() bool {
	if p.tick.IsZero() {
		return false
	}
	p.name = p.tick.Add(hostclock.Offset()).UnixMilli()
	p.lateBy = p.entry.Round(0).Sub(p.tick)
	if p.lateBy <= max(p.window, staleFloor) {
		p.lateBy = 0
		return true
	}
	return false
}

// fire returns the name of p's fire: this host's clock at the claim's
// entry, on the clock that names the ticks (ms). A run without a tick
// keeps it as its name (runrec's Fire).
func (p *probe) fire() int64 { return p.at(p.entry) }

// at returns t as the ticks' clock reads it (ms): this host's.
func (p *probe) at(t time.Time) int64 { return t.Add(hostclock.Offset()).UnixMilli() }

// ask notes a request about to be sent; got, its return (err): an answer,
// or the end of the wait for one, which leaves the request pending. h is
// the Runner's.
func (p *probe) ask(h *heard, ctx context.Context) {
	p.pending = 0
	if ctx.Err() == nil {
		p.pending = h.now()
	}
}

func (p *probe) got(h *heard, err error) {
	if h.note(err) {
		p.pending = 0
	}
}

// heard keeps when ZooKeeper last answered one of the Runner's requests:
// nanoseconds since the Runner was made, on the monotonic clock.
type heard struct {
	born time.Time
	at   atomic.Int64
}

func (h *heard) now() int64 { return int64(time.Since(h.born)) }

// note records an answer, whatever it said, when err is one: nil or the
// server's refusal, not a deadline, a lapsed lease nor a lost connection.
// It reports whether it was.
func (h *heard) note(err error) bool {
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, zklock.ErrSessionClosed) || errors.Is(err, zklock.ErrLeaseExpired) || connectionError(err)) {
		return false
	}
	h.at.Store(h.now())
	return true
}

// connectionError reports whether err is a connection's or a session's:
// ZooKeeper did not answer.
func connectionError(err error) bool {
	for _, e := range []error{zk.ErrConnectionClosed, zk.ErrNoServer, zk.ErrSessionExpired, zk.ErrClosing,
		zklock.ErrDisconnected, zklock.ErrSessionExpired, zklock.ErrOutcomeUnknown} {
		if errors.Is(err, e) {
			return true
		}
	}
	var op *net.OpError
	return errors.As(err, &op)
}

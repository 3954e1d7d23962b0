package worker

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/lockmetrics"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/record"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// impl is one lock implementation inside a worker process.
type impl interface {
	// holder returns the handle goroutine g acquires through.
	holder(g int) holder
	// tokenKind names what the fencing tokens are ("" when there are none).
	tokenKind() string
	// close releases everything and closes the connection.
	close() error
}

// holder acquires and releases lock paths for one goroutine. A goroutine
// holds at most one path at a time.
type holder interface {
	// acquire blocks until path p is held and returns the hold's token.
	acquire(ctx context.Context, p int) (token int64, err error)
	release(p int) error
	// lost returns, while path p is held, a channel that closes when the
	// hold is lost and a function that tells why; a nil channel when the
	// implementation cannot tell.
	lost(p int) (<-chan struct{}, func() error)
}

// kindHolder is a holder of the read/write lock and semaphore recipes:
// each hold is of the kind the loop picks (a read or a write; a number of
// permits). release ends whatever acquireKind took.
type kindHolder interface {
	holder
	acquireKind(ctx context.Context, p int, k record.Kind) (token int64, err error)
}

// acquire takes path p through h: as a hold of kind k for a kindHolder,
// else as a mutex hold (k is then the zero Kind).
func acquire(ctx context.Context, h holder, p int, k record.Kind) (int64, error) {
	if kh, ok := h.(kindHolder); ok {
		return kh.acquireKind(ctx, p, k)
	}
	return h.acquire(ctx, p)
}

// nextKind picks the kind of a goroutine's next hold: a read with
// probability Readers or else a write (rw), Permits permits (semaphore),
// or the zero Kind (mutex).
func (w *worker) nextKind(rng *rand.Rand) record.Kind {
	switch w.task.Recipe {
	case proto.RW:
		return record.Kind{Shared: rng.Float64() < w.task.Readers}
	case proto.Semaphore:
		return record.Kind{Permits: int32(w.task.Permits)}
	}
	return record.Kind{}
}

// sessioner is an implementation on a zklock.Session (tier, zklock): the
// flood fault needs one.
type sessioner interface{ session() *zklock.Session }

// floodListenerDelay is how long the worker's state listener takes over
// an expiry during a flood.
const floodListenerDelay = 1500 * time.Millisecond

// sessionEvents counts the worker's ZooKeeper session troubles (tier and
// zklock: the session's state listener), reported with its result.
type sessionEvents struct {
	disconnects, expiries atomic.Int64
	// slowOnExpiry makes the listener slow on an expiry while a flood is
	// on.
	slowOnExpiry atomic.Bool
}

// listen is the session's state listener.
func (ev *sessionEvents) listen(st zklock.State) {
	switch st {
	case zklock.StateDisconnected:
		ev.disconnects.Add(1)
	case zklock.StateExpired:
		ev.expiries.Add(1)
		if ev.slowOnExpiry.Load() {
			// During a flood the application's listener takes its time over
			// the expiry, as one that logs to a slow sink or takes a lock
			// of its own would: the events behind it pile up.
			time.Sleep(floodListenerDelay)
		}
	}
}

// sessionOptions are the options of a worker's zklock.Session: its
// connections are dialed through tally, which counts their requests.
func sessionOptions(task proto.Task, log *slog.Logger, listen func(zklock.State)) []zklock.SessionOption {
	return []zklock.SessionOption{
		zklock.WithSessionTimeout(task.SessionTimeout), zklock.WithLogger(log),
		zklock.WithStateListener(listen), zklock.WithDialer(tally.Dialer()),
	}
}

// newImpl connects to ZooKeeper (redsync: to Redis) and makes the locks
// of implementation task.Impl. m, when not nil, is told the session's states (tier, zklock)
// and the locks' events (tier, tier-handoff).
func newImpl(ctx context.Context, task proto.Task, log *slog.Logger, events *sessionEvents, m *lockmetrics.Collector) (impl, error) {
	switch task.Recipe {
	case proto.RW, proto.Semaphore:
		return newRecipeImpl(ctx, task, log, events)
	case proto.Multi:
		return newMultiImpl(ctx, task, log, events)
	}
	switch task.Impl {
	case proto.Tier, proto.TierHandoff, proto.Zklock:
		listen := events.listen
		var observe []tier.Option
		if m != nil {
			toMetrics := m.SessionListener()
			listen = func(st zklock.State) { events.listen(st); toMetrics(st) }
			observe = append(observe, tier.WithObserver(m.Observe))
		}
		s, err := zklock.Connect(ctx, task.Servers, sessionOptions(task, log, listen)...)
		if err != nil {
			return nil, err
		}
		var im impl
		switch task.Impl {
		case proto.Zklock:
			im, err = newZklockImpl(s, task.Paths, task.Proc)
		case proto.TierHandoff:
			im, err = newTierHandoffImpl(s, task, log, observe...)
		default:
			im, err = newTierImpl(s, task, log, observe...)
		}
		if err != nil {
			s.Close()
			return nil, err
		}
		return im, nil
	case proto.Gozk:
		return newGozkImpl(ctx, task)
	case proto.Zkcompat:
		return newZkcompatImpl(ctx, task)
	case proto.Curator, proto.Kazoo:
		return newPeerImpl(ctx, task)
	case proto.Redsync:
		return newRedsyncImpl(ctx, task)
	case proto.Nolock:
		return nolockImpl{}, nil
	case proto.FakeDrain, proto.FakeAbandon:
		return newFakeImpl(ctx, task)
	}
	return nil, fmt.Errorf("unknown implementation %q", task.Impl)
}

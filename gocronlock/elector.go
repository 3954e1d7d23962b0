package gocronlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tierlock/tierlock/election"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

var _ gocron.Elector = (*Elector)(nil)

// Elector is a gocron.Elector on tierlock's leader election: one instance
// of the fleet leads and runs every job; the others skip. It campaigns on
// one goroutine from NewElector until Close, and campaigns again whenever
// it loses the leadership. When the leader's process dies, its session
// expires and another instance leads about one session timeout later.
// It is safe for concurrent use.
type Elector struct {
	el   *election.Election
	cfg  electorConfig
	log  *slog.Logger
	held atomic.Pointer[context.Context] // the leadership, while it lasts

	cancel    context.CancelFunc
	done      chan struct{} // closed when the campaign goroutine returns
	closeOnce sync.Once
	notes     *notifier // runs the leader handler; nil without one
}

// NewElector starts campaigning at path, an absolute ZooKeeper path of the
// fleet's election, and returns the Elector to pass to
// gocron.WithDistributedElector. Close stops it. It logs to the session's
// logger (zklock.WithLogger).
func NewElector(s *zklock.Session, path string, opts ...ElectorOption) (*Elector, error) {
	if s == nil {
		return nil, runonce.ErrNilSession
	}
	cfg := electorConfig{value: instanceName(), retry: DefaultRetryInterval}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	el, err := election.New(s, path)
	if err != nil {
		return nil, fmt.Errorf("gocronlock: election: %w", err)
	}
	// The candidate's node carries the value: zklock refuses node data it
	// could not send. Ask it now, rather than campaign in vain for ever.
	if _, err := zklock.New(s, path, zklock.WithLabel(cfg.value)); err != nil {
		return nil, fmt.Errorf("%w: candidate value of %d bytes: %w", runonce.ErrInvalidOption, len(cfg.value), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Elector{
		el:     el,
		cfg:    cfg,
		log:    s.Logger().With("component", "gocronlock", "election", path),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	if s.LossOnExpiryOnly() {
		// Leadership survives a disconnection there, and two instances can
		// lead for up to T/8 (see the package doc): say so once.
		e.log.Warn("the session keeps holds through disconnections (zklock.WithLossOnExpiryOnly): two instances can lead at once for up to an eighth of the session timeout; gocron may run a job on both")
	}
	if cfg.onChange != nil {
		e.notes = newNotifier(cfg.onChange)
		go e.notes.run(e.done)
	}
	go e.campaign(ctx)
	return e, nil
}

// IsLeader returns nil while this instance leads and ErrNotLeader
// otherwise (runonce.ErrClosed after Close, or once the Elector stopped because
// its session was closed). It asks nothing of ZooKeeper: the
// leadership ends, and IsLeader says so, as soon as the session cannot
// vouch for it (see zklock's loss rules). ctx is not used.
func (e *Elector) IsLeader(context.Context) error {
	if e == nil {
		return runonce.ErrNil
	}
	if held := e.held.Load(); held != nil && (*held).Err() == nil {
		return nil
	}
	select {
	case <-e.done:
		return runonce.ErrClosed
	default:
		return ErrNotLeader
	}
}

// Leader returns the candidate value (WithCandidate) of the current leader,
// or an error matching election.ErrNoLeader when nobody leads.
func (e *Elector) Leader(ctx context.Context) (string, error) {
	if e == nil {
		return "", runonce.ErrNil
	}
	if ctx == nil {
		return "", runonce.ErrNilContext
	}
	return e.el.Leader(ctx)
}

// Close stops campaigning and gives the leadership up if this instance
// holds it, so that another instance leads at once. It waits for the
// campaign goroutine, never for the leader handler (WithLeaderHandler):
// the handler may call Close, and a call of it in progress may still run
// when Close returns. After Close has returned the handler is called at
// most once more: with false, when its last call was true. Close is
// idempotent and safe to call from several goroutines at once.
func (e *Elector) Close() error {
	if e == nil {
		return runonce.ErrNil
	}
	e.closeOnce.Do(func() {
		if e.notes != nil {
			e.notes.close() // before the leadership ends: see notifier
		}
		e.cancel()
	})
	<-e.done
	return nil
}

// campaign is the Elector's goroutine: campaign, lead until the leadership
// ends, and again, until ctx ends or the session is closed.
func (e *Elector) campaign(ctx context.Context) {
	defer close(e.done)
	for ctx.Err() == nil {
		held, err := e.el.Campaign(ctx, e.cfg.value)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, zklock.ErrSessionClosed):
			e.log.Warn("campaign stopped: session closed")
			return
		case err != nil:
			e.log.Warn("campaign failed", "err", err, "retry", e.cfg.retry)
			e.pause(ctx)
			continue
		}
		e.lead(ctx, held)
	}
}

// lead records the leadership held until it ends or ctx does, then gives
// it up.
func (e *Elector) lead(ctx context.Context, held context.Context) {
	e.held.Store(&held)
	e.log.Info("leading", "candidate", e.cfg.value)
	e.notify(true)
	select {
	case <-held.Done():
		e.log.Warn("leadership lost", "cause", context.Cause(held))
	case <-ctx.Done():
	}
	e.held.Store(nil)
	// After a loss Resign only closes the candidate's lock (its error says
	// the loss again).
	_ = e.el.Resign(held)
	e.notify(false)
}

// notify tells the leader handler, if any, without waiting for it.
func (e *Elector) notify(leading bool) {
	if e.notes != nil {
		e.notes.post(leading)
	}
}

// pause waits the retry interval or until ctx ends.
func (e *Elector) pause(ctx context.Context) {
	t := time.NewTimer(e.cfg.retry)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

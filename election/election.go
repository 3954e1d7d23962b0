// Package election is leader election on a zklock queue, in the shape Go
// users know from etcd's concurrency.Election: Campaign waits until the
// caller leads and returns a context that is cancelled when leadership is
// lost, Resign gives it up, Leader and Observe tell who leads. A candidate
// is a zklock.Lock whose node carries the candidate's value (as its
// label): the leader is the holder, the first node of the queue.
package election

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/tierlock/tierlock/zklock"
)

var (
	// ErrNil reports a method called on a nil *Election.
	ErrNil = errors.New("election: method called on a nil *Election")
	// ErrNotLeader reports a Resign with a context that Campaign did not
	// return on this Election, or that was resigned already.
	ErrNotLeader = errors.New("election: not a leadership of this election")
	// ErrNoLeader reports that nobody leads (nobody campaigns).
	ErrNoLeader = errors.New("election: no leader")
	// ErrResigned is the cause of a held context's cancellation by Resign.
	ErrResigned = errors.New("election: resigned")
)

// Election is one election, on one ZooKeeper path, seen from one session.
// It is safe for concurrent use.
type Election struct {
	s      *zklock.Session
	path   string
	opts   []zklock.Option
	reader *zklock.Lock // never acquired: for Participants
}

type leadership struct {
	lock     *zklock.Lock
	hold     *zklock.Hold
	cancel   context.CancelCauseFunc
	resigned atomic.Bool
}

type heldKey struct{ e *Election }

// New returns the election at path on s. opts go to each candidate's
// zklock.Lock (WithRecheckInterval, WithACL, ...); WithLabel and
// WithLossHandler are overridden: the label is Campaign's value, and a
// loss cancels the held context.
func New(s *zklock.Session, path string, opts ...zklock.Option) (*Election, error) {
	reader, err := zklock.New(s, path, opts...) // checks s, path and opts
	if err != nil {
		return nil, err
	}
	return &Election{s: s, path: path, opts: opts, reader: reader}, nil
}

// Campaign queues a candidate carrying value and waits until it leads, ctx
// ends, or an error that retrying cannot mend occurs (see
// zklock.Lock.Acquire: on an error its node's delete is under way, not
// awaited). It returns a context that has ctx's values but not its
// cancellation, and is cancelled when leadership ends: by Resign (cause
// ErrResigned) or by a loss of the node (the session expired, the
// connection dropped, the node was deleted: context.Cause wraps
// zklock.ErrLockLost), at the moment it is detected.
func (e *Election) Campaign(ctx context.Context, value string) (context.Context, error) {
	if e == nil {
		return nil, ErrNil
	}
	if ctx == nil {
		return nil, zklock.ErrNilContext
	}
	held, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	// WithNodeWatch: a leader whose node someone deleted hears of it at
	// once, not a quarter of the session timeout into its leadership.
	opts := append(e.opts[:len(e.opts):len(e.opts)], zklock.WithLabel(value), zklock.WithNodeWatch(),
		zklock.WithLossHandler(func(_ string, cause error) { cancel(fmt.Errorf("%w: %w", zklock.ErrLockLost, cause)) }))
	l, err := zklock.New(e.s, e.path, opts...)
	var h *zklock.Hold
	if err == nil {
		if h, err = l.Acquire(ctx); err != nil {
			_ = l.Close()
		}
	}
	if err != nil {
		cancel(err)
		return nil, err
	}
	// A loss before Acquire returned closed Lost before the hold was ours
	// to hear of: apply it here.
	select {
	case <-h.Lost():
		cancel(h.Err())
	default:
	}
	ld := &leadership{lock: l, hold: h, cancel: cancel}
	return context.WithValue(held, heldKey{e}, ld), nil
}

// Resign gives up the leadership held carries: its node is deleted (in the
// background, guaranteed, as zklock's Release) and held is cancelled with
// ErrResigned. Resigning a leadership that was lost returns an error
// wrapping zklock.ErrLockLost; resigning twice, or with any other context,
// returns ErrNotLeader.
func (e *Election) Resign(held context.Context) error {
	if e == nil {
		return ErrNil
	}
	if held == nil {
		return zklock.ErrNilContext
	}
	ld, _ := held.Value(heldKey{e}).(*leadership)
	if ld == nil || !ld.resigned.CompareAndSwap(false, true) {
		return ErrNotLeader
	}
	err := ld.hold.Release() // does not wait for ZooKeeper
	_ = ld.lock.Close()
	ld.cancel(ErrResigned)
	return err
}

// Leader returns the value of the current leader, or ErrNoLeader. It is
// zklock.Lock.Participants: one listing and one read per candidate,
// retried through connection losses until ctx ends.
func (e *Election) Leader(ctx context.Context) (string, error) {
	if e == nil {
		return "", ErrNil
	}
	ps, err := e.reader.Participants(ctx)
	if err != nil {
		return "", err
	}
	if len(ps) == 0 {
		return "", ErrNoLeader
	}
	return value(ps[0].Data), nil
}

// value decodes a candidate's value from its node's data (zklock's JSON).
func value(data []byte) string {
	var d struct {
		Label string `json:"label"`
	}
	_ = json.Unmarshal(data, &d)
	return d.Label
}

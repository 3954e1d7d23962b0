package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

const (
	// floodLocks is how many locks a flooded worker waits for at once: one
	// watch each, so that the expiry of its session makes go-zookeeper send
	// as many events in a burst.
	floodLocks = 200
	// floodListenerDelay is how long the worker's state listener takes over
	// an expiry during a flood.
	floodListenerDelay = 1500 * time.Millisecond
)

// floodSlowListener makes the state listener slow on an expiry while a
// flood is on.
var floodSlowListener atomic.Bool

// floodReport is how the waiters of a flood ended.
type floodReport struct {
	Waiters int `json:"waiters"`
	Queued  int `json:"queued"` // queued before the expiry
	Granted int `json:"granted"`
	Failed  int `json:"failed"`
	// Stuck waiters had not returned floodWaitBound after their holders let
	// go.
	Stuck int `json:"stuck"`
	// LostAtOnce counts grants (a waiter's, or a fresh lock's afterwards)
	// whose held context was already cancelled when Acquire returned.
	LostAtOnce int    `json:"lost_at_once"`
	Err        string `json:"err,omitempty"`
	ErrSample  string `json:"err_sample,omitempty"`
}

type sessioner interface{ session() *zklock.Session }

// floodWaitBound is how long the flood's waiters may take to end once
// their holders let go.
func (w *worker) floodWaitBound() time.Duration { return w.spec.SessionTimeout + 10*time.Second }

// flood queues floodLocks waiters behind holders on the worker's own
// session, says "flooding", waits for unflood (meanwhile the parent expires
// the session), lets the holders go and reports how the waiters ended.
func (w *worker) flood(unflood <-chan struct{}) {
	rep := &floodReport{Waiters: floodLocks}
	defer func() { w.out.send(message{Type: "flooded", Flood: rep}) }()
	sess, ok := w.im.(sessioner)
	if !ok {
		rep.Err = "flood needs tier or zklock"
		w.out.send(message{Type: "flooding"})
		<-unflood
		return
	}
	s := sess.session()
	floodSlowListener.Store(true)
	defer floodSlowListener.Store(false)
	quiet := tier.WithLogger(slog.New(slog.DiscardHandler))
	base := fmt.Sprintf("%s/flood-%d", w.spec.PathBase, w.spec.Proc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type lockPair struct{ h, w *tier.Lock }
	var locks []lockPair
	defer func() {
		for _, l := range locks {
			l.h.Close()
			l.w.Close()
		}
	}()
	held := make([]context.Context, floodLocks)
	for i := range floodLocks {
		path := fmt.Sprintf("%s/p%d", base, i)
		h, err := tier.New(s, path, quiet)
		if err != nil {
			rep.Err = err.Error()
			<-unflood
			return
		}
		wl, err := tier.New(s, path, quiet)
		if err != nil {
			h.Close()
			rep.Err = err.Error()
			<-unflood
			return
		}
		locks = append(locks, lockPair{h, wl})
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		held[i], err = h.Acquire(actx)
		acancel()
		if err != nil {
			rep.Err = fmt.Sprintf("holder %d: %v", i, err)
			<-unflood
			return
		}
	}
	type result struct {
		i    int
		held context.Context
		err  error
	}
	results := make(chan result, floodLocks)
	var waiting sync.WaitGroup
	defer waiting.Wait()
	defer cancel()
	for i := range floodLocks {
		waiting.Add(1)
		go func() {
			defer waiting.Done()
			h, err := locks[i].w.Acquire(ctx)
			results <- result{i, h, err}
		}()
	}
	// Queued: two nodes under every path (polled for at most 10s).
	deadline := time.Now().Add(10 * time.Second)
	for {
		rep.Queued = 0
		for i := range floodLocks {
			kids, _, err := s.Conn().Children(fmt.Sprintf("%s/p%d", base, i))
			if err == nil && len(kids) == 2 {
				rep.Queued++
			}
		}
		if rep.Queued == floodLocks || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.out.send(message{Type: "flooding", N: int64(rep.Queued)})
	<-unflood

	for i := range floodLocks {
		_ = locks[i].h.Release(held[i]) // lost with the session, most likely
	}
	bound := time.NewTimer(w.floodWaitBound())
	defer bound.Stop()
	var errSample error
collect:
	for n := 0; n < floodLocks; n++ {
		select {
		case r := <-results:
			if r.err != nil {
				rep.Failed++
				errSample = r.err
				continue
			}
			rep.Granted++
			if r.held.Err() != nil {
				rep.LostAtOnce++
			}
			_ = locks[r.i].w.Release(r.held)
		case <-bound.C:
			rep.Stuck = floodLocks - n
			break collect
		}
	}
	if errSample != nil {
		rep.ErrSample = errSample.Error()
	}
	// The session must work afterwards: a fresh hold is not lost at once.
	fresh, err := tier.New(s, base+"/fresh", quiet)
	if err == nil {
		fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
		h, err := fresh.Acquire(fctx)
		fcancel()
		switch {
		case err != nil:
			rep.Err = fmt.Sprintf("fresh lock after the flood: %v", err)
		case h.Err() != nil:
			rep.LostAtOnce++
			rep.ErrSample = fmt.Sprintf("fresh lock after the flood lost at once: %v", context.Cause(h))
		}
		if h != nil {
			if err := fresh.Release(h); err != nil && !errors.Is(err, zklock.ErrLockLost) && rep.Err == "" {
				rep.Err = fmt.Sprintf("fresh lock release: %v", err)
			}
		}
		fresh.Close()
	}
}

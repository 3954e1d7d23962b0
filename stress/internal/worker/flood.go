package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// floodWaitBound is how long the flood's waiters may take to end once
// their holders let go.
func (w *worker) floodWaitBound() time.Duration { return w.task.SessionTimeout + 10*time.Second }

// flood queues proto.FloodLocks waiters behind holders on the worker's own
// session, says Flooding, waits for unflood (meanwhile the parent expires
// the session), lets the holders go and reports how the waiters ended.
func (w *worker) flood(unflood <-chan struct{}) {
	rep := &proto.FloodReport{Waiters: proto.FloodLocks}
	defer func() { w.out.send(proto.Message{Type: proto.Flooded, Flood: rep}) }()
	sess, ok := w.im.(sessioner)
	if !ok {
		rep.Err = "flood needs tier or zklock"
		w.out.send(proto.Message{Type: proto.Flooding})
		<-unflood
		return
	}
	s := sess.session()
	w.events.slowOnExpiry.Store(true)
	defer w.events.slowOnExpiry.Store(false)
	base := fmt.Sprintf("%s/flood-%d", w.task.PathBase, w.task.Proc)
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
	held := make([]context.Context, proto.FloodLocks)
	for i := range proto.FloodLocks {
		path := fmt.Sprintf("%s/p%d", base, i)
		h, err := tier.New(s, path)
		if err != nil {
			rep.Err = err.Error()
			<-unflood
			return
		}
		wl, err := tier.New(s, path)
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
	results := make(chan result, proto.FloodLocks)
	var waiting sync.WaitGroup
	defer waiting.Wait()
	defer cancel()
	for i := range proto.FloodLocks {
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
		for i := range proto.FloodLocks {
			kids, _, err := s.Conn().Children(fmt.Sprintf("%s/p%d", base, i))
			if err == nil && len(kids) == 2 {
				rep.Queued++
			}
		}
		if rep.Queued == proto.FloodLocks || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.out.send(proto.Message{Type: proto.Flooding, N: int64(rep.Queued)})
	<-unflood

	for i := range proto.FloodLocks {
		_ = locks[i].h.Release(held[i]) // lost with the session, most likely
	}
	bound := time.NewTimer(w.floodWaitBound())
	defer bound.Stop()
	var errSample error
collect:
	for n := 0; n < proto.FloodLocks; n++ {
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
			rep.Stuck = proto.FloodLocks - n
			break collect
		}
	}
	if errSample != nil {
		rep.ErrSample = errSample.Error()
	}
	// The session must work afterwards: a fresh hold is not lost at once.
	fresh, err := tier.New(s, base+"/fresh")
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

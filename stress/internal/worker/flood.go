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
	f := &flooding{s: s, base: fmt.Sprintf("%s/flood-%d", w.task.PathBase, w.task.Proc), rep: rep}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer f.close()
	if err := f.hold(ctx); err != nil {
		rep.Err = err.Error()
		<-unflood
		return
	}
	results := make(chan floodResult, proto.FloodLocks)
	var waiting sync.WaitGroup
	defer waiting.Wait()
	defer cancel()
	for i := range proto.FloodLocks {
		waiting.Go(func() {
			h, err := f.locks[i].w.Acquire(ctx)
			results <- floodResult{i, h, err}
		})
	}
	f.awaitQueued()
	w.out.send(proto.Message{Type: proto.Flooding, N: int64(rep.Queued)})
	<-unflood

	for i := range proto.FloodLocks {
		_ = f.locks[i].h.Release(f.held[i]) // lost with the session, most likely
	}
	f.collect(results, w.floodWaitBound())
	// The session must work afterwards: a fresh hold is not lost at once.
	f.fresh(ctx)
}

// flooding is one flood's locks and report.
type flooding struct {
	s     *zklock.Session
	base  string
	rep   *proto.FloodReport
	locks []floodPair
	held  []context.Context
}

// floodPair is a path's two locks on the one session: the holder's and
// the waiter's.
type floodPair struct{ h, w *tier.Lock }

type floodResult struct {
	i    int
	held context.Context
	err  error
}

// hold takes every path's holder lock.
func (f *flooding) hold(ctx context.Context) error {
	f.held = make([]context.Context, proto.FloodLocks)
	for i := range proto.FloodLocks {
		path := fmt.Sprintf("%s/p%d", f.base, i)
		h, err := tier.New(f.s, path)
		if err != nil {
			return err
		}
		wl, err := tier.New(f.s, path)
		if err != nil {
			h.Close()
			return err
		}
		f.locks = append(f.locks, floodPair{h, wl})
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		f.held[i], err = h.Acquire(actx)
		acancel()
		if err != nil {
			return fmt.Errorf("holder %d: %w", i, err)
		}
	}
	return nil
}

func (f *flooding) close() {
	for _, l := range f.locks {
		l.h.Close()
		l.w.Close()
	}
}

// awaitQueued counts the paths with two nodes (holder and waiter), polled
// until all have or 10s passed.
func (f *flooding) awaitQueued() {
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.rep.Queued = 0
		for i := range proto.FloodLocks {
			kids, _, err := f.s.Conn().Children(fmt.Sprintf("%s/p%d", f.base, i))
			if err == nil && len(kids) == 2 {
				f.rep.Queued++
			}
		}
		if f.rep.Queued == proto.FloodLocks || time.Now().After(deadline) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// collect reports how the waiters ended, those not ended within bound as
// stuck.
func (f *flooding) collect(results <-chan floodResult, bound time.Duration) {
	t := time.NewTimer(bound)
	defer t.Stop()
	var errSample error
	defer func() {
		if errSample != nil {
			f.rep.ErrSample = errSample.Error()
		}
	}()
	for n := 0; n < proto.FloodLocks; n++ {
		select {
		case r := <-results:
			if r.err != nil {
				f.rep.Failed++
				errSample = r.err
				continue
			}
			f.rep.Granted++
			if r.held.Err() != nil {
				f.rep.LostAtOnce++
			}
			_ = f.locks[r.i].w.Release(r.held)
		case <-t.C:
			f.rep.Stuck = proto.FloodLocks - n
			return
		}
	}
}

// fresh checks that the session works after the flood: a fresh hold is
// not lost at once.
func (f *flooding) fresh(ctx context.Context) {
	fresh, err := tier.New(f.s, f.base+"/fresh")
	if err != nil {
		return
	}
	defer fresh.Close()
	fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
	h, err := fresh.Acquire(fctx)
	fcancel()
	switch {
	case err != nil:
		f.rep.Err = fmt.Sprintf("fresh lock after the flood: %v", err)
	case h.Err() != nil:
		f.rep.LostAtOnce++
		f.rep.ErrSample = fmt.Sprintf("fresh lock after the flood lost at once: %v", context.Cause(h))
	}
	if h != nil {
		if err := fresh.Release(h); err != nil && !errors.Is(err, zklock.ErrLockLost) && f.rep.Err == "" {
			f.rep.Err = fmt.Sprintf("fresh lock release: %v", err)
		}
	}
}

package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/record"
	"github.com/tierlock/tierlock/zklock"
)

// worker runs the goroutines of one worker process.
type worker struct {
	task     proto.Task
	im       impl
	rec      *record.Writer
	out      *messenger
	events   *sessionEvents
	stop     context.CancelFunc
	counts   []int64 // per goroutine, each written by its goroutine only
	total    atomic.Int64
	overflow atomic.Bool

	lastEnter atomic.Int64 // latest enter time, for the parent's recovery watch
	losses    atomic.Int64
	abandoned atomic.Int64              // acquisitions begun and given up when the run ended
	lingerReq atomic.Pointer[lingerReq] // the next hold lingers when set
	hw        *holdWriter               // writes of the holds (runs with faults); nil: none
	wakes     *wakeWatch                // SIGCONTs received (runs with faults)

	errMu   sync.Mutex
	errors  int64
	samples []string
}

const (
	maxErrorSamples   = 5
	maxGoroutineFails = 100 // consecutive failures after which a goroutine gives up
)

func (w *worker) fail(err error) {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	w.errors++
	if len(w.samples) < maxErrorSamples {
		w.samples = append(w.samples, err.Error())
	}
}

func (w *worker) run(ctx context.Context) {
	var wg sync.WaitGroup
	for g := range w.task.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx, g)
		}()
	}
	wg.Wait()
}

// loop is one goroutine: acquire a path, record the critical section,
// release, until the quota is met or ctx ends.
func (w *worker) loop(ctx context.Context, g int) {
	h := w.im.holder(g)
	quota := int64(-1)
	if w.task.Quota != nil {
		quota = w.task.Quota[g]
	}
	rng := rand.New(rand.NewPCG(w.task.Seed, uint64(w.task.Proc)<<32|uint64(g)))
	nPaths := len(w.task.Paths)
	fails := 0
	for k := 0; quota < 0 || w.counts[g] < quota; k++ {
		if ctx.Err() != nil {
			return
		}
		p := (g + k) % nPaths
		if w.task.Pick == "random" {
			p = rng.IntN(nPaths)
		}
		kind := w.nextKind(rng)
		start := time.Now()
		token, err := acquire(ctx, h, p, kind)
		latency := time.Since(start)
		if err != nil {
			if ctx.Err() != nil {
				w.abandoned.Add(1)
				return // the run is over: the wait was abandoned
			}
			w.fail(fmt.Errorf("acquire %s: %w", w.task.Paths[p], err))
			if fails++; fails >= maxGoroutineFails {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		fails = 0
		enter := exclusion.Now()
		slot, err := w.rec.EnterKind(enter, token, int64(latency), int32(g), int32(p), kind)
		var more memberSlots // a multi-lock hold's other members
		if err == nil {
			more, err = w.enterMembers(h, enter, latency, g, p, kind)
		}
		recorded := err == nil
		if recorded {
			w.noteEnter(enter)
			w.inside(ctx, h, g, p, kind, token, slot)
			more.exit(exclusion.Now())
		} else {
			// No room to record: stop the run rather than hold unrecorded.
			w.overflow.Store(true)
			w.stop()
		}
		w.release(h, p)
		if !recorded {
			return
		}
		w.counts[g] += 1 + int64(len(more))
		w.total.Add(1 + int64(len(more)))
	}
}

// inside is a recorded hold of path p, from its enter to its exit: the
// guarded writes, a linger the parent asked for, or the critical section.
func (w *worker) inside(ctx context.Context, h holder, g, p int, kind record.Kind, token int64, slot record.Slot) {
	lost, cause := h.lost(p)
	var lw *lossWatch
	if w.task.Faults && lost != nil {
		lw = watchLoss(lost, slot)
	}
	defer lw.end()
	write := w.writesFor(kind)
	if write {
		w.hw.write(h, p, g, token)
	}
	switch req := w.takeLinger(kind); {
	case req != nil && req.pause:
		w.lingerPause(ctx, req, h, g, p, token, slot, lost, cause, write)
	case req != nil:
		w.linger(ctx, req, g, p, token, slot, lost, cause)
	default:
		w.critical(lost)
		slot.Exit(exclusion.Now())
	}
}

// release releases path p; a lost hold is counted, and an error only when
// it is not a loss in a run with faults.
func (w *worker) release(h holder, p int) {
	err := h.release(p)
	if err == nil {
		return
	}
	lost := errors.Is(err, zklock.ErrLockLost)
	if lost {
		w.losses.Add(1)
	}
	if !lost || !w.task.Faults {
		w.fail(fmt.Errorf("release %s: %w", w.task.Paths[p], err))
	}
}

// critical is the work done while holding the lock. It stops early when
// the hold is lost (lost closes), as code guarded by a lock should.
func (w *worker) critical(lost <-chan struct{}) {
	switch {
	case w.task.Hold <= 0:
	case w.task.HoldMode == "spin":
		_ = spin(w.task.Hold, lost)
	case lost == nil:
		time.Sleep(w.task.Hold)
	default:
		t := time.NewTimer(w.task.Hold)
		select {
		case <-t.C:
		case <-lost:
			t.Stop()
		}
	}
}

// spin busy-works for d, or until stop closes; it returns its work so that
// the compiler cannot drop it.
func spin(d time.Duration, stop <-chan struct{}) uint64 {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for range 64 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if stop != nil {
			select {
			case <-stop:
				return x
			default:
			}
		}
	}
	return x
}

// noteEnter keeps the latest enter time.
func (w *worker) noteEnter(t int64) {
	for {
		last := w.lastEnter.Load()
		if t <= last || w.lastEnter.CompareAndSwap(last, t) {
			return
		}
	}
}

// lingerReq is a pending proto.Linger (or, with pause, proto.LingerPause);
// cancel is closed by proto.Unlinger.
type lingerReq struct {
	cancel chan struct{}
	pause  bool
}

// takeLinger takes the pending linger request for a hold of kind k, if
// there is one for it: a pause lingers on an exclusive hold only (a
// write, of a read/write lock), the hold that writes.
func (w *worker) takeLinger(k record.Kind) *lingerReq {
	req := w.lingerReq.Load()
	if req == nil || req.pause && k.Shared || !w.lingerReq.CompareAndSwap(req, nil) {
		return nil
	}
	return req
}

// linger keeps a hold until it is lost, the parent withdraws the request,
// the run ends, or a bound passes; the parent hears of its start and end.
func (w *worker) linger(ctx context.Context, req *lingerReq, g, p int, token int64, slot record.Slot,
	lost <-chan struct{}, cause func() error) {
	w.out.send(proto.Message{Type: proto.Holding, At: exclusion.Now(), G: int32(g), Path: int32(p), Token: token})
	t := time.NewTimer(3*w.task.SessionTimeout + 10*time.Second)
	defer t.Stop()
	why := ""
	select {
	case <-lost:
		why = "lost"
		if cause != nil {
			if err := cause(); err != nil {
				why = err.Error()
			}
		}
	case <-req.cancel:
	case <-t.C:
	case <-ctx.Done():
	}
	at := exclusion.Now()
	slot.Exit(at)
	w.out.send(proto.Message{Type: proto.Lingered, At: at, G: int32(g), Path: int32(p), Token: token, Cause: why})
}

// lossWatch records in a hold's record when its holder saw it lost, for the
// checker's loss-before-grant check. It runs from the hold's start until
// just before its Release, whose own cancellation of the held context is
// not a loss.
type lossWatch struct{ stop, done chan struct{} }

func watchLoss(lost <-chan struct{}, slot record.Slot) *lossWatch {
	lw := &lossWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(lw.done)
		select {
		case <-lost:
			slot.Lost(exclusion.Now())
		case <-lw.stop:
		}
	}()
	return lw
}

// end stops the watch and waits for it (nil: nothing to stop).
func (lw *lossWatch) end() {
	if lw == nil {
		return
	}
	close(lw.stop)
	<-lw.done
}

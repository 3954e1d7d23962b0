package worker

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/record"
	"github.com/tierlock/tierlock/stress/internal/writes"
	"github.com/tierlock/tierlock/zklock"
)

// guarder is a holder whose lock has guarded transactions (tier,
// tier-handoff: tier.Lock.Txn; zklock: zklock.Hold.Txn): ops applied by
// the server only while the hold's node exists.
type guarder interface {
	txn(p int, ops []any) error
}

func (h *tierHolder) txn(p int, ops []any) error {
	_, err := h.used[p].Txn(h.held[p], ops...)
	return err
}

func (im *zklockImpl) txn(p int, ops []any) error {
	ctx, cancel := context.WithTimeout(context.Background(), writes.Timeout)
	defer cancel()
	_, err := im.holds[p].Txn(ctx, ops...)
	return err
}

// holdWriter writes, on behalf of each exclusive hold, to the guarded
// resources of a run with faults (stress/internal/writes): the path's
// guarded node through the lock's guarded transaction, then the fenced
// store, in that order, so that a write seen by the store was preceded by
// its guarded write.
type holdWriter struct {
	proc   int32
	fence  *writes.Client // nil: no fenced store
	guards []string       // by path; nil: no guarded nodes

	applied, stale, lostKnown, unknown, other atomic.Int64
	admitted, refused, fenceErrs              atomic.Int64
	mu                                        sync.Mutex
	samples                                   []string
}

// newHoldWriter returns the writer of task's holds, nil when the run has
// no guarded resources.
func newHoldWriter(task proto.Task) *holdWriter {
	if task.Fence == "" && task.Guard == "" {
		return nil
	}
	hw := &holdWriter{proc: int32(task.Proc)}
	if task.Fence != "" {
		hw.fence = writes.Dial(task.Fence)
	}
	if task.Guard != "" {
		hw.guards = proto.LockPaths(task.Guard, task.NPaths)
	}
	return hw
}

// writesFor reports whether holds of kind k are written for: exclusive
// holds of a mutex or a read/write lock. Readers do not write; the
// tokens of a semaphore's leases are not ordered among them (leases are
// held side by side), so nothing could refuse a stale one; a multi-lock
// hold is not written for.
func (w *worker) writesFor(k record.Kind) bool {
	if w.hw == nil || k.Shared {
		return false
	}
	return w.task.Recipe == "" || w.task.Recipe == proto.Mutex || w.task.Recipe == proto.RW
}

// Outcomes of a guarded write (proto.WakeReport.Guarded).
const (
	txnApplied  = "applied"
	txnStale    = "refused by the server"
	txnLost     = "refused by the lock"
	txnUnknown  = "unknown"
	txnError    = "error"
	fenceOK     = "admitted"
	fenceStale  = "refused"
	fenceFailed = "error"
)

// write writes for goroutine g's hold of path p with token through h, and
// tells how the writes ended.
func (hw *holdWriter) write(h holder, p, g int, token int64) proto.WakeReport {
	var r proto.WakeReport
	if gd, ok := h.(guarder); ok && hw.guards != nil {
		err := gd.txn(p, writes.Ops(hw.guards[p], token, hw.proc, int32(g)))
		r.GuardedAt = exclusion.Now()
		switch {
		case err == nil:
			r.Guarded = txnApplied
			hw.applied.Add(1)
		case errors.Is(err, zklock.ErrStaleHold):
			r.Guarded = txnStale
			hw.stale.Add(1)
		case errors.Is(err, zklock.ErrLockLost):
			r.Guarded = txnLost
			hw.lostKnown.Add(1)
		case errors.Is(err, zklock.ErrOutcomeUnknown):
			r.Guarded = txnUnknown
			hw.unknown.Add(1)
		default:
			r.Guarded = txnError
			hw.other.Add(1)
			hw.sample("guarded write: " + err.Error())
		}
		if err != nil {
			r.GuardedErr = err.Error()
		}
	}
	if hw.fence != nil {
		high, err := hw.fence.Write(int32(p), token, hw.proc, int32(g))
		r.FenceAt = exclusion.Now()
		switch {
		case err == nil:
			r.Fence = fenceOK
			hw.admitted.Add(1)
		case errors.Is(err, writes.ErrStale):
			r.Fence, r.FenceHigh = fenceStale, high
			hw.refused.Add(1)
		default:
			r.Fence = fenceFailed
			hw.fenceErrs.Add(1)
			hw.sample(err.Error())
		}
		if err != nil {
			r.FenceErr = err.Error()
		}
	}
	return r
}

func (hw *holdWriter) sample(s string) {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	if len(hw.samples) < maxErrorSamples {
		hw.samples = append(hw.samples, s)
	}
}

// counts is what the writer counted, for the worker's result (nil: no
// writer).
func (hw *holdWriter) counts() *proto.WriteCounts {
	if hw == nil {
		return nil
	}
	hw.mu.Lock()
	defer hw.mu.Unlock()
	return &proto.WriteCounts{
		GuardedApplied: hw.applied.Load(), GuardedStale: hw.stale.Load(), GuardedLost: hw.lostKnown.Load(),
		GuardedUnknown: hw.unknown.Load(), GuardedOther: hw.other.Load(),
		FenceAdmitted: hw.admitted.Load(), FenceRefused: hw.refused.Load(), FenceErrors: hw.fenceErrs.Load(),
		Samples: append([]string(nil), hw.samples...),
	}
}

func (hw *holdWriter) close() {
	if hw != nil && hw.fence != nil {
		hw.fence.Close()
	}
}

// wakeWatch counts the SIGCONTs the worker received: a worker of a run
// with faults may be stopped (the pause fault) and let go on.
type wakeWatch struct {
	n    atomic.Int64
	sig  chan os.Signal
	done chan struct{}
}

func watchWakes() *wakeWatch {
	ww := &wakeWatch{sig: make(chan os.Signal, 1), done: make(chan struct{})}
	signal.Notify(ww.sig, syscall.SIGCONT)
	go func() {
		defer close(ww.done)
		for range ww.sig {
			ww.n.Add(1)
		}
	}()
	return ww
}

// count is the number of SIGCONTs so far (0 for a nil watch).
func (ww *wakeWatch) count() int64 {
	if ww == nil {
		return 0
	}
	return ww.n.Load()
}

func (ww *wakeWatch) stop() {
	if ww == nil {
		return
	}
	signal.Stop(ww.sig)
	close(ww.sig)
	<-ww.done
}

// lingerPause keeps a hold, like linger, for a holder that the parent
// stops (SIGSTOP) past its session timeout and then lets go on. It tells
// the parent it holds, then watches for its own wake: a SIGCONT, or a
// jump of the clock of more than half the session timeout between two
// looks 1ms apart (a stopped process does not look). On waking it writes
// at once, through its lock's guarded transaction and to the fenced store,
// whether or not it has seen its loss yet: the write a holder paused
// between its check and its write makes when it resumes, which the server
// and the fence must refuse, since a later holder was granted the lock
// and wrote meanwhile. Then it waits for its loss and leaves; its
// Lingered message carries how those writes ended.
func (w *worker) lingerPause(ctx context.Context, req *lingerReq, h holder, g, p int, token int64, slot record.Slot,
	lost <-chan struct{}, cause func() error, write bool) {
	conts := w.wakes.count()
	// The first look is taken before the parent is told: it stops us only
	// after that, so that a stop anywhere from here on shows as a gap. (A
	// look taken after the message missed a stop that fell between the
	// two, and a loss seen before the SIGCONT's delivery then hid the
	// wake: a 30-minute soak reported "did not notice" once.)
	last := exclusion.Now()
	w.out.send(proto.Message{Type: proto.Holding, At: exclusion.Now(), G: int32(g), Path: int32(p), Token: token})
	gap := int64(w.task.SessionTimeout / 2)
	bound := time.NewTimer(3*w.task.SessionTimeout + 10*time.Second)
	defer bound.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var wake *proto.WakeReport
	// woke checks for a wake since the last look and, the first time,
	// makes the writes.
	woke := func() {
		now := exclusion.Now()
		if wake == nil && (now-last > gap || w.wakes.count() != conts) {
			wake = &proto.WakeReport{At: now}
			if write && w.hw != nil {
				r := w.hw.write(h, p, g, token)
				r.At = now
				wake = &r
			}
		}
		last = now
	}
	why := ""
wait:
	for {
		select {
		case <-tick.C:
			woke()
		case <-lost:
			woke() // the loss may come before the tick that sees the wake
			why = "lost"
			if cause != nil {
				if err := cause(); err != nil {
					why = err.Error()
				}
			}
			break wait
		case <-req.cancel:
			break wait
		case <-bound.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	at := exclusion.Now()
	slot.Exit(at)
	w.out.send(proto.Message{Type: proto.Lingered, At: at, G: int32(g), Path: int32(p), Token: token, Cause: why, Wake: wake})
}

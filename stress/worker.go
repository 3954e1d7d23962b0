package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/stress/internal/record"
	"github.com/tierlock/tierlock/zklock"
)

// workerEnv marks a process as a worker; its value is the workerSpec as
// JSON. The parent re-executes its own binary with it set.
const workerEnv = "TIERLOCK_STRESS_WORKER"

// workerSpec is everything a worker process needs to know.
type workerSpec struct {
	Impl           string        `json:"impl"`
	Proc           int           `json:"proc"`
	Goroutines     int           `json:"goroutines"`
	Procs          int           `json:"procs"`
	PathBase       string        `json:"path_base"` // lock paths are PathBase/lock-<i>
	NPaths         int           `json:"npaths"`
	Duration       time.Duration `json:"duration"`
	Acquisitions   int64         `json:"acquisitions,omitempty"` // in all; 0: run for Duration
	Hold           time.Duration `json:"hold"`
	HoldMode       string        `json:"hold_mode"`
	Pick           string        `json:"pick"`
	HandoffMax     int           `json:"handoff_max"`
	HandoffMaxHold time.Duration `json:"handoff_max_hold"`
	Servers        []string      `json:"servers"`
	SessionTimeout time.Duration `json:"session_timeout"`
	ConnectTimeout time.Duration `json:"connect_timeout"`
	RecordFile     string        `json:"record_file"`
	RecordCap      int64         `json:"record_cap"`
	Seed           uint64        `json:"seed"`
	Verbose        bool          `json:"verbose"`
	// Faults is set in runs with fault injection: a hold that ends by a
	// loss (its Release reports zklock.ErrLockLost) is then expected and
	// counted, not an error.
	Faults bool `json:"faults,omitempty"`
	Slot   int  `json:"slot"` // the place among the P workers; a replacement takes its killed predecessor's

	// Derived by the worker, so that the spec stays small in the
	// environment whatever the numbers of paths and goroutines.
	Paths []string `json:"-"`
	Quota []int64  `json:"-"` // acquisitions per goroutine; nil: run for Duration
}

// derive fills in the fields computed from the others.
func (s *workerSpec) derive() {
	s.Paths = lockPaths(s.PathBase, s.NPaths)
	if s.Acquisitions > 0 {
		s.Quota = splitQuota(s.Acquisitions, s.Procs, s.Goroutines)[s.Proc]
	}
}

// lockPaths names the n lock paths of a run below base.
func lockPaths(base string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s/lock-%d", base, i)
	}
	return out
}

// message is one line a worker writes on its stdout for the parent.
type message struct {
	Type   string        `json:"type"`          // ready, progress, done, result, error, holding, lingered
	N      int64         `json:"n,omitempty"`   // progress, done: acquisitions so far
	Err    string        `json:"err,omitempty"` // error: why the worker gives up
	Result *workerResult `json:"result,omitempty"`
	// progress: enter time (shared clock) of the latest acquisition, how
	// many times the worker's ZooKeeper session expired so far, and how
	// many of its holds were lost.
	Last    int64 `json:"last,omitempty"`
	Expired int64 `json:"expired,omitempty"`
	Losses  int64 `json:"losses,omitempty"` // holds that ended by a loss so far
	// holding, lingered: the hold kept on request of cmdLinger.
	At    int64  `json:"at,omitempty"` // shared clock: when it was entered / left
	G     int32  `json:"g,omitempty"`
	Path  int32  `json:"path,omitempty"`
	Token int64  `json:"token,omitempty"`
	Cause string `json:"cause,omitempty"` // lingered: why the hold was lost; "" if it was not
	// flooded: how the flood's waiters ended.
	Flood *floodReport `json:"flood,omitempty"`
}

// workerResult is what a worker reports after its run.
type workerResult struct {
	PerGoroutine []int64  `json:"per_goroutine"` // acquisitions by goroutine
	Errors       int64    `json:"errors"`        // failed acquisitions and releases
	ErrorSamples []string `json:"error_samples,omitempty"`
	Records      int64    `json:"records"`
	TokenKind    string   `json:"token_kind"`
	Overflow     bool     `json:"overflow,omitempty"` // the record file filled up
	Losses       int64    `json:"losses,omitempty"`   // holds that ended by a loss (fault runs)
	Disconnects  int64    `json:"disconnects,omitempty"`
	Expiries     int64    `json:"expiries,omitempty"` // ZooKeeper sessions that expired
}

// Commands the parent writes on a worker's stdin, one per line.
const (
	cmdGo   = "go"   // start acquiring
	cmdStop = "stop" // stop acquiring early
	cmdExit = "exit" // release everything, report and exit
	// cmdLinger asks that the next hold be kept until it is lost (or
	// cmdUnlinger): the worker says "holding" when it enters that hold and
	// "lingered" when it leaves it. Fault injection uses it to put a fault
	// on a process that certainly holds a lock.
	cmdLinger   = "linger"
	cmdUnlinger = "unlinger"
	// cmdFlood asks for a flood: the worker queues floodLocks waiters on
	// locks its own session holds and says "flooding"; the parent then
	// expires the session; cmdUnflood makes the worker let the holders go,
	// wait for every waiter to end and say "flooded" with a floodReport.
	cmdFlood   = "flood"
	cmdUnflood = "unflood"
)

// workerMain is the worker process: it returns the exit status.
func workerMain(specJSON string) int {
	var spec workerSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "stress worker: bad %s: %v\n", workerEnv, err)
		return 3
	}
	spec.derive()
	out := &messenger{enc: json.NewEncoder(os.Stdout)}
	if err := runWorker(spec, os.Stdin, out); err != nil {
		out.send(message{Type: "error", Err: err.Error()})
		fmt.Fprintf(os.Stderr, "stress worker %d: %v\n", spec.Proc, err)
		return 3
	}
	return 0
}

type messenger struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (m *messenger) send(msg message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_ = m.enc.Encode(msg)
}

func runWorker(spec workerSpec, in io.Reader, out *messenger) error {
	level := slog.LevelWarn
	if spec.Verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).
		With("worker", spec.Proc, "impl", spec.Impl)

	// Commands from the parent. EOF (the parent is gone) counts as exit.
	cmds := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			cmds <- sc.Text()
		}
		close(cmds)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), spec.ConnectTimeout)
	im, err := newImpl(ctx, spec, log)
	cancel()
	if err != nil {
		return fmt.Errorf("%s: %w", spec.Impl, err)
	}
	rec, err := record.Create(spec.RecordFile, spec.RecordCap)
	if err != nil {
		im.close()
		return err
	}
	w := &worker{spec: spec, im: im, rec: rec, out: out, counts: make([]int64, spec.Goroutines)}
	out.send(message{Type: "ready"})

	if cmd, ok := <-cmds; !ok || cmd != cmdGo {
		im.close()
		rec.Close()
		return fmt.Errorf("told %q instead of %q", cmd, cmdGo)
	}
	var (
		runCtx context.Context
		stop   context.CancelFunc
	)
	if spec.Quota == nil {
		runCtx, stop = context.WithTimeout(context.Background(), spec.Duration)
	} else {
		runCtx, stop = context.WithCancel(context.Background())
	}
	w.stop = stop
	finished := make(chan struct{})
	go func() { w.run(runCtx); close(finished) }()

	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	exit := false
	pending := cmds // nil once closed, so that select does not spin on it
	var linger *lingerReq
	var unflood chan struct{}
	var floods sync.WaitGroup
	defer floods.Wait()
wait:
	for {
		select {
		case <-finished:
			break wait
		case <-tick.C:
			out.send(message{Type: "progress", N: w.total.Load(), Last: w.lastEnter.Load(),
				Expired: sessionEvents.expiries.Load(), Losses: w.losses.Load()})
		case cmd, ok := <-pending:
			if !ok {
				pending = nil
			}
			switch {
			case !ok || cmd == cmdStop || cmd == cmdExit:
				exit = exit || !ok || cmd == cmdExit
				stop()
			case cmd == cmdLinger:
				linger = &lingerReq{cancel: make(chan struct{})}
				w.lingerReq.Store(linger)
			case cmd == cmdUnlinger && linger != nil:
				w.lingerReq.Store(nil)
				close(linger.cancel)
				linger = nil
			case cmd == cmdFlood && unflood == nil:
				unflood = make(chan struct{})
				floods.Add(1)
				go func(unflood <-chan struct{}) {
					defer floods.Done()
					w.flood(unflood)
				}(unflood)
			case cmd == cmdUnflood && unflood != nil:
				close(unflood)
				unflood = nil
			}
		}
	}
	stop()
	if unflood != nil {
		close(unflood)
	}
	floods.Wait()
	out.send(message{Type: "done", N: w.total.Load()})
	for !exit {
		cmd, ok := <-cmds
		exit = !ok || cmd == cmdExit
	}

	res := &workerResult{PerGoroutine: w.counts, TokenKind: im.tokenKind(), Overflow: w.overflow.Load(),
		Losses: w.losses.Load(), Disconnects: sessionEvents.disconnects.Load(), Expiries: sessionEvents.expiries.Load()}
	if err := im.close(); err != nil {
		w.fail(fmt.Errorf("close: %w", err))
	}
	res.Records = rec.Count()
	if err := rec.Close(); err != nil {
		return fmt.Errorf("records: %w", err)
	}
	w.errMu.Lock()
	res.Errors, res.ErrorSamples = w.errors, w.samples
	w.errMu.Unlock()
	out.send(message{Type: "result", Result: res})
	return nil
}

// worker runs the goroutines of one worker process.
type worker struct {
	spec     workerSpec
	im       impl
	rec      *record.Writer
	out      *messenger
	stop     context.CancelFunc
	counts   []int64 // per goroutine, each written by its goroutine only
	total    atomic.Int64
	overflow atomic.Bool

	lastEnter atomic.Int64 // latest enter time, for the parent's recovery watch
	losses    atomic.Int64
	lingerReq atomic.Pointer[lingerReq] // the next hold lingers when set

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
	for g := range w.spec.Goroutines {
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
	if w.spec.Quota != nil {
		quota = w.spec.Quota[g]
	}
	rng := rand.New(rand.NewPCG(w.spec.Seed, uint64(w.spec.Proc)<<32|uint64(g)))
	nPaths := len(w.spec.Paths)
	fails := 0
	for k := 0; quota < 0 || w.counts[g] < quota; k++ {
		if ctx.Err() != nil {
			return
		}
		p := (g + k) % nPaths
		if w.spec.Pick == "random" {
			p = rng.IntN(nPaths)
		}
		start := time.Now()
		token, err := h.acquire(ctx, p)
		latency := time.Since(start)
		if err != nil {
			if ctx.Err() != nil {
				return // the run is over: the wait was abandoned
			}
			w.fail(fmt.Errorf("acquire %s: %w", w.spec.Paths[p], err))
			if fails++; fails >= maxGoroutineFails {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		fails = 0
		enter := record.Now()
		slot, err := w.rec.Enter(enter, token, int64(latency), int32(g), int32(p))
		recorded := err == nil
		if recorded {
			w.noteEnter(enter)
			lost, cause := h.lost(p)
			var lw *lossWatch
			if w.spec.Faults && lost != nil {
				lw = watchLoss(lost, slot)
			}
			if req := w.lingerReq.Swap(nil); req != nil {
				w.linger(ctx, req, g, p, token, slot, lost, cause)
			} else {
				w.critical(lost)
				slot.Exit(record.Now())
			}
			lw.end()
		} else {
			// No room to record: stop the run rather than hold unrecorded.
			w.overflow.Store(true)
			w.stop()
		}
		if err := h.release(p); err != nil {
			lost := errors.Is(err, zklock.ErrLockLost)
			if lost {
				w.losses.Add(1)
			}
			if !lost || !w.spec.Faults {
				w.fail(fmt.Errorf("release %s: %w", w.spec.Paths[p], err))
			}
		}
		if !recorded {
			return
		}
		w.counts[g]++
		w.total.Add(1)
	}
}

// critical is the work done while holding the lock. It stops early when
// the hold is lost (lost closes), as code guarded by a lock should.
func (w *worker) critical(lost <-chan struct{}) {
	switch {
	case w.spec.Hold <= 0:
	case w.spec.HoldMode == "spin":
		spin(w.spec.Hold, lost)
	case lost == nil:
		time.Sleep(w.spec.Hold)
	default:
		t := time.NewTimer(w.spec.Hold)
		select {
		case <-t.C:
		case <-lost:
			t.Stop()
		}
	}
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

// lingerReq is a pending cmdLinger; cancel is closed by cmdUnlinger.
type lingerReq struct{ cancel chan struct{} }

// linger keeps a hold until it is lost, the parent withdraws the request,
// the run ends, or maxLinger passes; the parent hears of its start and end.
func (w *worker) linger(ctx context.Context, req *lingerReq, g, p int, token int64, slot record.Slot,
	lost <-chan struct{}, cause func() error) {
	w.out.send(message{Type: "holding", At: record.Now(), G: int32(g), Path: int32(p), Token: token})
	t := time.NewTimer(3*w.spec.SessionTimeout + 10*time.Second)
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
	at := record.Now()
	slot.Exit(at)
	w.out.send(message{Type: "lingered", At: at, G: int32(g), Path: int32(p), Token: token, Cause: why})
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
			slot.Lost(record.Now())
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

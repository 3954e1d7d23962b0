package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/stress/internal/record"
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
	Type   string        `json:"type"`          // ready, progress, done, result, error
	N      int64         `json:"n,omitempty"`   // progress, done: acquisitions so far
	Err    string        `json:"err,omitempty"` // error: why the worker gives up
	Result *workerResult `json:"result,omitempty"`
}

// workerResult is what a worker reports after its run.
type workerResult struct {
	PerGoroutine []int64  `json:"per_goroutine"` // acquisitions by goroutine
	Errors       int64    `json:"errors"`        // failed acquisitions and releases
	ErrorSamples []string `json:"error_samples,omitempty"`
	Records      int64    `json:"records"`
	TokenKind    string   `json:"token_kind"`
	Overflow     bool     `json:"overflow,omitempty"` // the record file filled up
}

// Commands the parent writes on a worker's stdin, one per line.
const (
	cmdGo   = "go"   // start acquiring
	cmdStop = "stop" // stop acquiring early
	cmdExit = "exit" // release everything, report and exit
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
	w := &worker{spec: spec, im: im, rec: rec, counts: make([]int64, spec.Goroutines)}
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
wait:
	for {
		select {
		case <-finished:
			break wait
		case <-tick.C:
			out.send(message{Type: "progress", N: w.total.Load()})
		case cmd, ok := <-pending:
			if !ok {
				pending = nil
			}
			if !ok || cmd == cmdStop || cmd == cmdExit {
				exit = exit || !ok || cmd == cmdExit
				stop()
			}
		}
	}
	stop()
	out.send(message{Type: "done", N: w.total.Load()})
	for !exit {
		cmd, ok := <-cmds
		exit = !ok || cmd == cmdExit
	}

	res := &workerResult{PerGoroutine: w.counts, TokenKind: im.tokenKind(), Overflow: w.overflow.Load()}
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
	stop     context.CancelFunc
	counts   []int64 // per goroutine, each written by its goroutine only
	total    atomic.Int64
	overflow atomic.Bool

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
		slot, err := w.rec.Enter(record.Now(), token, int64(latency), int32(g), int32(p))
		recorded := err == nil
		if recorded {
			w.critical()
			slot.Exit(record.Now())
		} else {
			// No room to record: stop the run rather than hold unrecorded.
			w.overflow.Store(true)
			w.stop()
		}
		if err := h.release(p); err != nil {
			w.fail(fmt.Errorf("release %s: %w", w.spec.Paths[p], err))
		}
		if !recorded {
			return
		}
		w.counts[g]++
		w.total.Add(1)
	}
}

// critical is the work done while holding the lock.
func (w *worker) critical() {
	switch {
	case w.spec.Hold <= 0:
	case w.spec.HoldMode == "spin":
		spin(w.spec.Hold)
	default:
		time.Sleep(w.spec.Hold)
	}
}

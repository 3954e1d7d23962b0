// Package worker is a stress worker process: it runs one lock
// implementation from G goroutines, records every critical section and
// answers the parent's commands (internal/proto). It knows nothing of the
// parent: what it needs arrives in its task, and what it has to say leaves
// as messages on its stdout.
//
// One file per implementation: tier.go (tier and tier-handoff), zklock.go,
// gozk.go, zkcompat.go, peer.go (the -mix peers curator and kazoo),
// redsync.go (go-redsync/redsync on Redis) and nolock.go, and for the
// read/write lock and semaphore recipes recipe.go (which also drives
// Curator's) and tierrecipe.go; loop.go is the goroutines'
// acquire-record-release loop, and flood.go the flood fault's waiters.
package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/tierlock/tierlock/internal/child"
	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/record"
)

// Main is the worker process, started by internal/child in role
// proto.Role: it returns the exit status.
func Main() int {
	var task proto.Task
	if err := child.Task(&task); err != nil {
		fmt.Fprintf(os.Stderr, "stress worker: %v\n", err)
		return 3
	}
	task.Derive()
	out := &messenger{enc: json.NewEncoder(os.Stdout)}
	if err := runTask(task, os.Stdin, out); err != nil {
		out.send(proto.Message{Type: proto.Error, Err: err.Error()})
		fmt.Fprintf(os.Stderr, "stress worker %d: %v\n", task.Proc, err)
		return 3
	}
	return 0
}

// messenger writes messages to the parent, one JSON object a line, from
// any goroutine.
type messenger struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (m *messenger) send(msg proto.Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_ = m.enc.Encode(msg)
}

// runTask runs task: it reads the parent's commands from in and writes its
// messages through out.
func runTask(task proto.Task, in io.Reader, out *messenger) error {
	level := slog.LevelWarn
	if task.Verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).
		With("worker", task.Proc, "impl", task.Impl)

	// Commands from the parent. EOF (the parent is gone) counts as exit.
	cmds := make(chan proto.Command, 4)
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			cmds <- proto.Command(sc.Text())
		}
		close(cmds)
	}()

	events := &sessionEvents{}
	var ms *metricsServer
	if task.Metrics != "" {
		var err error
		if ms, err = serveMetrics(task.Metrics); err != nil {
			return err
		}
		defer ms.close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), task.ConnectTimeout)
	im, err := newImpl(ctx, task, log, events, ms.collector())
	cancel()
	if err != nil {
		return fmt.Errorf("%s: %w", task.Impl, err)
	}
	rec, err := record.Create(task.RecordFile, task.RecordCap)
	if err != nil {
		im.close()
		return err
	}
	w := &worker{task: task, im: im, rec: rec, out: out, events: events, counts: make([]int64, task.Goroutines),
		hw: newHoldWriter(task)}
	defer w.hw.close()
	if task.Faults {
		w.wakes = watchWakes()
		defer w.wakes.stop()
	}
	out.send(proto.Message{Type: proto.Ready})

	cmd, ok := <-cmds
	t0, isGo := cmd.GoTime()
	if !ok || !isGo {
		im.close()
		rec.Close()
		return fmt.Errorf("told %q instead of %q", cmd, proto.Go)
	}
	if t0 == 0 {
		t0 = exclusion.Now()
	}
	exit, window := w.serve(cmds, t0)
	for !exit {
		cmd, ok := <-cmds
		exit = !ok || cmd == proto.Exit
	}

	res := &proto.Result{PerGoroutine: w.counts, TokenKind: im.tokenKind(), Overflow: w.overflow.Load(),
		Losses: w.losses.Load(), Disconnects: events.disconnects.Load(), Expiries: events.expiries.Load(),
		Abandoned: w.abandoned.Load(), Window: window, Writes: w.hw.counts()}
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
	out.send(proto.Message{Type: proto.ResultMsg, Result: res})
	return nil
}

// serve runs the goroutines and answers commands until the run is over,
// then says Done; it reports whether the parent already said Exit (or went
// away), and what the worker measured of itself in the window.
//
// The run started at t0 (shared clock). A timed run ends shortly after
// its measured window, t0 + Warmup + Duration + proto.DeadlineGrace: its
// waits are then abandoned (those that can be: zk.Lock's cannot, and its
// goroutines drain). A run
// with faults or a quota has no window of its own: it is measured from t0
// to its end.
func (w *worker) serve(cmds <-chan proto.Command, t0 int64) (exit bool, window *proto.Window) {
	runCtx, stop, start, end := w.runContext(t0)
	w.stop = stop
	m := startMeter(w.im, start, end)
	finished := make(chan struct{})
	go func() { w.run(runCtx); close(finished) }()

	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	pending := cmds // nil once closed, so that select does not spin on it
	c := &commander{w: w, stop: stop}
	defer c.floods.Wait()
wait:
	for {
		select {
		case <-finished:
			break wait
		case <-tick.C:
			w.out.send(proto.Message{Type: proto.Progress, N: w.total.Load(), Last: w.lastEnter.Load(),
				Expired: w.events.expiries.Load(), Losses: w.losses.Load()})
		case cmd, ok := <-pending:
			if !ok {
				pending = nil
			}
			c.take(cmd, ok)
		}
	}
	stop()
	window = m.finish()
	c.end()
	w.out.send(proto.Message{Type: proto.Done, N: w.total.Load()})
	return c.exit, window
}

// runContext is the context of the run that started at t0, and its
// measured window [start, end) (end 0: until the run ends; see serve).
func (w *worker) runContext(t0 int64) (ctx context.Context, stop context.CancelFunc, start, end int64) {
	start = t0 + int64(w.task.Warmup)
	switch {
	case w.task.Quota != nil:
		ctx, stop = context.WithCancel(context.Background())
	case w.task.Faults:
		// The parent ends a run with faults; Duration is a safety net.
		ctx, stop = context.WithTimeout(context.Background(), w.task.Duration)
	default:
		end = start + int64(w.task.Duration)
		ctx, stop = context.WithTimeout(context.Background(), time.Duration(end-exclusion.Now())+proto.DeadlineGrace)
	}
	return ctx, stop, start, end
}

// commander carries out the parent's commands during a run.
type commander struct {
	w       *worker
	stop    context.CancelFunc
	exit    bool // the parent said Exit, or went away
	linger  *lingerReq
	unflood chan struct{}
	floods  sync.WaitGroup
}

// take carries out cmd (ok false: the parent closed the commands).
func (c *commander) take(cmd proto.Command, ok bool) {
	switch {
	case !ok || cmd == proto.Stop || cmd == proto.Exit:
		c.exit = c.exit || !ok || cmd == proto.Exit
		c.stop()
	case cmd == proto.Linger || cmd == proto.LingerPause:
		c.linger = &lingerReq{cancel: make(chan struct{}), pause: cmd == proto.LingerPause}
		c.w.lingerReq.Store(c.linger)
	case cmd == proto.Unlinger && c.linger != nil:
		c.w.lingerReq.Store(nil)
		close(c.linger.cancel)
		c.linger = nil
	case cmd == proto.Flood && c.unflood == nil:
		c.unflood = make(chan struct{})
		unflood := c.unflood
		c.floods.Go(func() { c.w.flood(unflood) })
	case cmd == proto.CloseLocks:
		c.floods.Go(c.w.closeLocks)
	case cmd == proto.Unflood && c.unflood != nil:
		close(c.unflood)
		c.unflood = nil
	}
}

// end ends a flood still going, and waits for it.
func (c *commander) end() {
	if c.unflood != nil {
		close(c.unflood)
		c.unflood = nil
	}
	c.floods.Wait()
}

// Package fleet is the parent's side of the stress command's worker
// processes: it starts them (internal/child, role proto.Role), decodes
// their messages into one channel, broadcasts commands, waits for every
// worker to say something, and kills and replaces workers for the fault
// injector.
//
// Workers are indexed by process: a worker killed on purpose stays in the
// list, marked, and its replacement is added at the end with the next
// index. The fault injector starts and kills workers while the parent's
// loop reads messages, hence the mutex.
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tierlock/tierlock/internal/child"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// ErrRun marks failures to carry out a run (the stress command's exit
// status 3), as opposed to a run that found violations.
var ErrRun = errors.New("run failed")

// Msg is a message from worker Proc; EOF reports that the worker's stdout
// closed (it exited or crashed) and that it was reaped.
type Msg struct {
	Proc int
	proto.Message
	EOF bool
}

// Worker is the parent's handle on one worker process.
type Worker struct {
	Index int
	p     *child.Proc
}

// Send writes a command to the worker; a worker that is gone is ignored
// (its end is reported through its messages).
func (w *Worker) Send(cmd proto.Command) { w.p.Send(string(cmd)) }

// Pid is the worker's process id.
func (w *Worker) Pid() int { return w.p.Pid() }

// Kill stops the worker at once.
func (w *Worker) Kill() { w.p.Kill() }

// Exited is closed once the worker exited and was reaped.
func (w *Worker) Exited() <-chan struct{} { return w.p.Exited() }

// Describe explains how a worker ended, with the end of its stderr.
func (w *Worker) Describe() string { return w.p.Describe(fmt.Sprintf("worker %d", w.Index)) }

// Fleet is the set of workers of one run and their messages.
type Fleet struct {
	exe         string
	passthrough io.Writer

	// Msgs carries every worker's messages, in the order they came.
	Msgs chan Msg

	mu     sync.Mutex
	procs  []*Worker
	killed []bool
	alive  int // workers whose stdout has not closed yet
	done   bool
}

// New returns an empty fleet whose workers run exe and copy their stderr
// to passthrough, if not nil.
func New(exe string, passthrough io.Writer) *Fleet {
	return &Fleet{exe: exe, passthrough: passthrough, Msgs: make(chan Msg, 64)}
}

// Start starts a worker with the next process index on the task that
// task returns for that index, under the lock, so that its first message
// cannot arrive before it is known.
func (f *Fleet) Start(task func(proc int) proto.Task) (*Worker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	proc := len(f.procs)
	t := task(proc)
	p, err := child.Start(child.Spec{Role: proto.Role, Task: t, Exe: f.exe, Stderr: f.passthrough})
	if err != nil {
		return nil, fmt.Errorf("start worker %d: %w", proc, err)
	}
	return f.add(proc, p), nil
}

// Replace starts a worker with the next process index in the place of
// worker old, which is killed (and marked so) if it still runs.
func (f *Fleet) Replace(old int, task func(proc int) proto.Task) (*Worker, error) {
	f.Kill(old)
	f.mu.Lock()
	defer f.mu.Unlock()
	proc := len(f.procs)
	p, err := f.procs[old].p.Replace(task(proc))
	if err != nil {
		return nil, fmt.Errorf("replace worker %d: %w", old, err)
	}
	return f.add(proc, p), nil
}

// add adds p as worker proc and starts passing its messages on; f.mu is
// held.
func (f *Fleet) add(proc int, p *child.Proc) *Worker {
	w := &Worker{Index: proc, p: p}
	f.procs = append(f.procs, w)
	f.killed = append(f.killed, false)
	f.alive++
	go func() {
		for line := range p.Lines() {
			var m proto.Message
			if err := json.Unmarshal(line, &m); err != nil {
				// Not ours (something printed on stdout): keep it for errors.
				p.Note("stdout: " + string(line))
				continue
			}
			f.Msgs <- Msg{Proc: proc, Message: m}
		}
		f.Msgs <- Msg{Proc: proc, EOF: true}
	}()
	return w
}

// Size is the number of workers started, killed ones included.
func (f *Fleet) Size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.procs)
}

// Get returns worker i.
func (f *Fleet) Get(i int) *Worker {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.procs[i]
}

// Kill marks worker i as killed on purpose (its end is not a failure) and
// kills it.
func (f *Fleet) Kill(i int) {
	f.mu.Lock()
	f.killed[i] = true
	w := f.procs[i]
	f.mu.Unlock()
	w.Kill()
}

// Killed reports whether worker i was killed on purpose.
func (f *Fleet) Killed(i int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.killed[i]
}

// Live returns the indexes of the workers not killed.
func (f *Fleet) Live() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for i, k := range f.killed {
		if !k {
			out = append(out, i)
		}
	}
	return out
}

// Broadcast sends cmd to every live worker.
func (f *Fleet) Broadcast(cmd proto.Command) {
	for _, i := range f.Live() {
		f.Get(i).Send(cmd)
	}
}

// Ended counts a worker's end (its EOF message); it reports whether the
// end was expected (the worker was killed on purpose).
func (f *Fleet) Ended(i int) (expected bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.alive--
	return f.killed[i]
}

// Await waits until every live worker has sent a message of type typ,
// calling fn for every message. When ctx ends or timeout passes while the
// workers are running (typ Done), they are told to stop and given a grace
// period to report; interrupted tells that this happened.
func (f *Fleet) Await(ctx context.Context, typ proto.MsgType, timeout time.Duration, fn func(Msg)) (interrupted bool, err error) {
	got := make([]bool, f.Size())
	n := 0
	want := len(f.Live())
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	stopped := false
	stopAll := func() {
		if !stopped {
			stopped = true
			f.Broadcast(proto.Stop)
			timer.Reset(30 * time.Second)
		}
	}
	ctxDone := ctx.Done()
	for n < want {
		select {
		case m := <-f.Msgs:
			first, skip, err := f.awaitMsg(m, typ, got)
			if err != nil {
				return interrupted, err
			}
			if first {
				n++
			}
			if fn != nil && !skip {
				fn(m)
			}
		case <-ctxDone:
			ctxDone = nil
			interrupted = true
			if typ != proto.Done {
				return interrupted, fmt.Errorf("%w: %w", ErrRun, ctx.Err())
			}
			stopAll()
		case <-timer.C:
			if typ != proto.Done || stopped {
				return interrupted, f.notHeard(typ, got, timeout)
			}
			interrupted = true
			stopAll() // -timeout: stop, then give up if they do not finish
		}
	}
	return interrupted, nil
}

// awaitMsg handles one message for Await: whether it is the first of typ
// from its worker, whether fn skips it (a worker that ended as expected:
// killed on purpose, or exited after it reported its result), or the
// error that ends the wait.
func (f *Fleet) awaitMsg(m Msg, typ proto.MsgType, got []bool) (first, skip bool, err error) {
	switch {
	case m.EOF:
		if f.Ended(m.Proc) || got[m.Proc] && typ == proto.ResultMsg {
			return false, true, nil
		}
		return false, false, fmt.Errorf("%w: %s", ErrRun, f.Get(m.Proc).Describe())
	case m.Type == proto.Error:
		return false, false, fmt.Errorf("%w: worker %d: %s", ErrRun, m.Proc, m.Err)
	case m.Type == typ && !got[m.Proc]:
		got[m.Proc] = true
		return true, false, nil
	}
	return false, false, nil
}

// notHeard is Await's error when the live workers not in got did not send
// typ within timeout.
func (f *Fleet) notHeard(typ proto.MsgType, got []bool, timeout time.Duration) error {
	var waiting []string
	for _, i := range f.Live() {
		if !got[i] {
			waiting = append(waiting, f.Get(i).Describe())
		}
	}
	return fmt.Errorf("%w: no %q from %d worker(s) within %v:\n  %s",
		ErrRun, typ, len(waiting), timeout, strings.Join(waiting, "\n  "))
}

// Shutdown waits until every worker has exited and been reaped, killing
// those still running at once (kill) or after a grace period. It is
// idempotent.
func (f *Fleet) Shutdown(kill bool) {
	f.mu.Lock()
	if f.done {
		f.mu.Unlock()
		return
	}
	f.done = true
	procs := append([]*Worker(nil), f.procs...)
	f.mu.Unlock()
	if kill {
		for _, w := range procs {
			w.Kill()
		}
	}
	grace := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		alive := f.alive
		f.mu.Unlock()
		if alive <= 0 {
			return
		}
		select {
		case m := <-f.Msgs:
			if m.EOF {
				f.Ended(m.Proc)
			}
		case <-grace:
			for _, w := range procs {
				w.Kill()
			}
			grace = nil
		}
	}
}

package fault

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// pause stops one worker (SIGSTOP) while it holds a lock, for longer than
// its session timeout, then lets it go on (SIGCONT): a process paused past
// its session, as by a long garbage collection, a debugger, or a frozen
// virtual machine. While it is stopped it cannot notice anything; the
// server expires its session and grants the lock to another worker, which
// writes to the path's guarded node and to the fenced store. The pause
// lasts the session timeout + 1-2s and, when the run has a fenced store,
// until a later holder's token was admitted there (at most 10s more), so
// that the holder's write on waking meets a later holder's.
//
// On waking, the holder writes at once, before looking at its lock (a
// holder paused between its check and its write): the server must refuse
// its guarded write (its node is gone) or its lock must, knowing the hold
// lost; the fenced store must refuse its write (a later token was
// admitted). Then it must see its hold lost, within the session timeout
// of waking. The checker cuts the holds it had in progress at the stop
// there (exclusion.Options.Paused): their holder could not be told sooner,
// so the loss-before-grant check does not apply to them, and what shows
// that the pause did no harm is that no write of the paused holder landed
// after a later holder's (exclusion.CheckWrites on both resources).
func (fr *injector) pause(ev *Event) {
	slot, proc := fr.pick()
	w := fr.f.Get(proc)
	pid := w.Pid()
	ev.Target = fr.workerTarget(slot, proc)
	ev.affected, ev.target = []int{proc}, proc
	fr.mu.Lock()
	ev.expiredBefore = fr.expired[proc]
	fr.mu.Unlock()
	// A read/write lock's pause waits for a write hold, which can take a
	// while behind the readers.
	holding := fr.lingerWith(proc, proto.LingerPause, 10*time.Second)
	ev.Variant = "holder stopped"
	if holding == nil {
		ev.Variant = "stopped (no hold within 10s)"
	}
	d := fr.s.SessionTimeout + time.Second + time.Duration(fr.rng.IntN(1000))*time.Millisecond
	ev.start = exclusion.Now()
	from := time.Now() // no step of the worker's after this is late by the pause
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		ev.Failure = fmt.Sprintf("SIGSTOP: %v", err)
		if holding != nil {
			w.Send(proto.Unlinger)
		}
		return
	}
	cont := func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	if !waitStopped(pid, 2*time.Second) {
		cont()
		ev.Failure = fmt.Sprintf("worker %d (pid %d) not stopped within 2s of SIGSTOP", proc, pid)
		return
	}
	// Known stopped: no hold of it enters from now until it goes on.
	stop := exclusion.Now()
	fr.stayStopped(d, holding)
	contAt := exclusion.Now() // it is still stopped: nothing of it enters before
	trace.Paused(pid, from, time.Now())
	cont()
	ev.healed = exclusion.Now()
	ev.ref = ev.healed
	fr.out.Paused[int32(proc)] = append(fr.out.Paused[int32(proc)],
		exclusion.Pause{Stop: stop, Cont: contAt, Until: contAt + int64(fr.s.SessionTimeout+5*time.Second)})
	ev.Note = fmt.Sprintf("stopped %.2fs", float64(contAt-ev.start)/1e9)
	if holding == nil {
		return
	}
	ev.Note += fmt.Sprintf("; it held lock-%d (token %d)", holding.Path, holding.Token)
	if fr.tg.Fence != nil {
		if high := fr.tg.Fence.High(holding.Path); high > holding.Token {
			ev.LaterToken = high
			ev.Note += fmt.Sprintf("; a later holder wrote token %d", high)
		} else {
			ev.Note += "; no later holder wrote while it was stopped"
		}
	}
	fr.judgeWake(ev, proc, holding, contAt)
}

// stayStopped returns once the worker has been stopped for d and, when the
// run has a fenced store and the worker held, a later holder's token was
// admitted there; at most 10s more, or until the injector aborts.
func (fr *injector) stayStopped(d time.Duration, holding *proto.Message) {
	minEnd := time.Now().Add(d)
	limit := minEnd.Add(10 * time.Second)
	laterWrote := func() bool {
		return holding == nil || fr.tg.Fence == nil || fr.tg.Fence.High(holding.Path) > holding.Token
	}
	for {
		now := time.Now()
		if now.After(limit) || !now.Before(minEnd) && laterWrote() {
			return
		}
		select {
		case <-fr.abort:
			limit = now
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// judgeWake waits for the woken holder to report its loss, notes what it
// did on waking, and fails the event when that was not refused, or not
// seen in time.
func (fr *injector) judgeWake(ev *Event, proc int, holding *proto.Message, contAt int64) {
	within := fr.s.SessionTimeout + 5*time.Second
	m := fr.waitEvent(proc, proto.Lingered, within)
	fr.noteHolder(ev, proc, m, within)
	if m == nil {
		return
	}
	after := float64(m.At-contAt) / 1e9
	ev.LossAfterWakeSec = &after
	wk := m.Wake
	if wk == nil {
		if ev.Failure == "" {
			ev.Failure = "the holder did not notice that it had been stopped"
		}
		return
	}
	ev.WakeGuarded, ev.WakeFence = describeGuarded(wk), describeFence(wk, holding.Token)
	var did []string
	for _, s := range []string{ev.WakeGuarded, ev.WakeFence} {
		if s != "" {
			did = append(did, s)
		}
	}
	if len(did) > 0 {
		ev.Note += "; on waking: " + strings.Join(did, ", ")
	}
	if m.Cause != "" {
		ev.Note += fmt.Sprintf("; loss seen %.3fs after waking", after)
	}
	if f := fr.wakeFailure(ev, m, holding, contAt, after); f != "" && ev.Failure == "" {
		ev.Failure = f
	}
}

// wakeFailure is what the woken holder did wrong, or "".
func (fr *injector) wakeFailure(ev *Event, m *proto.Message, holding *proto.Message, contAt int64, after float64) string {
	wk := m.Wake
	switch {
	case wk.At < contAt:
		return fmt.Sprintf("the holder took itself for woken %.3fs before it was let go on", float64(contAt-wk.At)/1e9)
	case wk.Guarded == "applied":
		return fmt.Sprintf("the server applied the guarded write the paused holder made on waking (token %d)", holding.Token)
	case wk.Guarded == "error":
		return fmt.Sprintf("the paused holder's guarded write on waking failed: %s", wk.GuardedErr)
	case wk.Fence == "admitted" && ev.LaterToken != 0:
		return fmt.Sprintf("the fenced store admitted the paused holder's token %d after token %d", holding.Token, ev.LaterToken)
	case wk.Fence == "error":
		return fmt.Sprintf("the paused holder's write to the fenced store on waking failed: %s", wk.FenceErr)
	case m.Cause != "" && after > fr.s.SessionTimeout.Seconds():
		return fmt.Sprintf("the holder saw its hold lost only %.2fs after waking", after)
	}
	return ""
}

// describeGuarded says how a paused holder's guarded write on waking
// ended ("" if it made none).
func describeGuarded(wk *proto.WakeReport) string {
	switch wk.Guarded {
	case "":
		return ""
	case "refused by the server":
		return "guarded write refused by the server (node gone)"
	case "refused by the lock":
		return "guarded write refused by the lock (loss known)"
	}
	return "guarded write " + wk.Guarded
}

// describeFence says how a paused holder's write to the fenced store on
// waking ended ("" if it made none).
func describeFence(wk *proto.WakeReport, token int64) string {
	switch wk.Fence {
	case "":
		return ""
	case "refused":
		return fmt.Sprintf("fenced write refused (token %d < %d)", token, wk.FenceHigh)
	}
	return "fenced write " + wk.Fence
}

// waitStopped waits up to d until process pid is stopped (state T in
// /proc/<pid>/stat).
func waitStopped(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		// pid (comm) state ...: comm may hold anything, so look after
		// its last ')'.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

package fault

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/stress/internal/fleet"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// injector injects faults into one implementation's run and drives the run
// meanwhile: the parent's loop reads the workers' messages, the injector
// goroutine injects one fault at a time, heals it, and waits until the
// workers it hit acquire again before it waits for the next.
type injector struct {
	impl    string
	s       Settings
	tg      Target
	f       *fleet.Fleet
	rng     *rand.Rand
	start   int64     // shared clock when the workers were told to go
	startAt time.Time // the same moment on the wall clock
	out     Outcome   // written by the injector goroutine until done closes

	events  chan fleet.Msg // ready, holding, lingered, flooding, flooded: for the injector
	stopNew chan struct{}  // closed at the nominal end: no new fault
	abort   chan struct{}  // closed when the run fails: heal and stop
	done    chan struct{}  // closed when the injector returned

	mu       sync.Mutex
	last     map[int]int64 // process: latest enter time it reported
	expired  map[int]int64 // process: session expiries it reported
	losses   map[int]int64 // process: holds lost, as it reported
	slotProc []int         // slot: its current process

	bag []Kind // kinds still to inject in this round (see nextKind)
}

// nextKind draws the next fault kind: the kinds come in rounds, each a
// random permutation of all of them, so that every kind is injected as
// often as the others (within one) however long the run, while the order
// stays unpredictable. Drawing each kind independently left some kinds at
// 4 of 100 faults in a 12-minute soak.
func (fr *injector) nextKind() Kind {
	if len(fr.bag) == 0 {
		fr.bag = append(fr.bag[:0], fr.s.Kinds...)
		fr.rng.Shuffle(len(fr.bag), func(i, j int) { fr.bag[i], fr.bag[j] = fr.bag[j], fr.bag[i] })
	}
	k := fr.bag[0]
	fr.bag = fr.bag[1:]
	return k
}

// Drive runs implementation impl's run, whose workers were told to go at
// start (shared clock) and startAt, with faults injected all along: until
// the nominal end, extended while a fault is being recovered from; then it
// stops the workers and waits for their Done. onProgress sees every
// Progress message. interrupted tells that ctx ended or -timeout passed.
func Drive(ctx context.Context, impl string, start int64, startAt time.Time, s Settings, tg Target,
	onProgress func(fleet.Msg)) (out Outcome, interrupted bool, err error) {
	fr := &injector{
		impl: impl, s: s, tg: tg, f: tg.Fleet, start: start, startAt: startAt,
		// The same seed gives every implementation the same schedule.
		rng:     rand.New(rand.NewPCG(uint64(s.Seed), 0x746965726c6f636b)),
		out:     Outcome{Killed: map[int32]int64{}, Paused: map[int32][]exclusion.Pause{}},
		events:  make(chan fleet.Msg, 64),
		stopNew: make(chan struct{}),
		abort:   make(chan struct{}),
		done:    make(chan struct{}),
		last:    map[int]int64{},
		expired: map[int]int64{},
		losses:  map[int]int64{},
	}
	for i := range s.Procs {
		fr.slotProc = append(fr.slotProc, i)
	}
	interrupted, err = fr.drive(ctx, onProgress)
	return fr.out, interrupted, err
}

// drive is Drive once the injector is made.
func (fr *injector) drive(ctx context.Context, onProgress func(fleet.Msg)) (interrupted bool, err error) {
	go fr.inject()
	defer func() {
		if err != nil {
			close(fr.abort)
		}
		<-fr.done // whatever happened, faults are healed before the run ends
	}()
	end := time.NewTimer(fr.s.Duration)
	defer end.Stop()
	hard := time.NewTimer(fr.s.Timeout)
	defer hard.Stop()
	var (
		stopNew  sync.Once
		injDone  = fr.done
		finished bool // the injector returned
		ending   bool // the nominal end passed, or the run was interrupted
		stopping bool // the workers were told to stop
		doneFrom = map[int]bool{}
		ctxDone  = ctx.Done()
	)
	for {
		if stopping && fr.allDone(doneFrom) {
			return interrupted, nil
		}
		select {
		case m := <-fr.f.Msgs:
			if err := fr.take(m, doneFrom, onProgress); err != nil {
				return interrupted, err
			}
		case <-end.C:
			ending = true
			stopNew.Do(func() { close(fr.stopNew) })
		case <-ctxDone:
			ctxDone = nil
			interrupted, ending = true, true
			stopNew.Do(func() { close(fr.stopNew) })
		case <-injDone:
			injDone, finished = nil, true
		case <-hard.C:
			if stopping {
				return interrupted, fmt.Errorf("%w: workers did not finish within %v (-timeout) and 30s more", fleet.ErrRun, fr.s.Timeout)
			}
			// -timeout: stop now, even amid a fault.
			interrupted, ending, finished = true, true, true
			stopNew.Do(func() { close(fr.stopNew) })
			hard.Reset(30 * time.Second)
		}
		if ending && finished && !stopping {
			stopping = true
			fr.f.Broadcast(proto.Stop)
		}
	}
}

// allDone says whether every live worker said Done.
func (fr *injector) allDone(doneFrom map[int]bool) bool {
	for _, p := range fr.f.Live() {
		if !doneFrom[p] {
			return false
		}
	}
	return true
}

// take handles one message of the workers; an error ends the run (a worker
// that died not on purpose, or reported an error).
func (fr *injector) take(m fleet.Msg, doneFrom map[int]bool, onProgress func(fleet.Msg)) error {
	switch {
	case m.EOF:
		if fr.f.Ended(m.Proc) {
			return nil // killed on purpose
		}
		return fmt.Errorf("%w: %s", fleet.ErrRun, fr.f.Get(m.Proc).Describe())
	case m.Type == proto.Error:
		return fmt.Errorf("%w: worker %d: %s", fleet.ErrRun, m.Proc, m.Err)
	case m.Type == proto.Progress:
		fr.mu.Lock()
		fr.last[m.Proc] = max(fr.last[m.Proc], m.Last)
		fr.expired[m.Proc] = max(fr.expired[m.Proc], m.Expired)
		fr.losses[m.Proc] = max(fr.losses[m.Proc], m.Losses)
		fr.mu.Unlock()
		onProgress(m)
	case m.Type == proto.Done:
		doneFrom[m.Proc] = true
	case m.Type == proto.Ready || m.Type == proto.Holding || m.Type == proto.Lingered ||
		m.Type == proto.Flooding || m.Type == proto.Flooded || m.Type == proto.Reopened:
		select {
		case fr.events <- m:
		default: // nobody waits for it
		}
	}
	return nil
}

// faults maps each kind to the method that injects it.
func (fr *injector) faults() map[Kind]func(*Event) {
	return map[Kind]func(*Event){
		Restart: fr.restart, Leader: fr.leader, Expire: fr.expire, Drop: fr.drop, Kill: fr.kill,
		Partition: fr.partition, Reset: fr.reset, Flood: fr.flood, Stall: fr.stall, Pause: fr.pause,
		Close: fr.closeLocks,
	}
}

// inject is the injector goroutine: faults one after the other, each after
// a random pause (uniform between half and one and a half -fault-every),
// their kinds in shuffled rounds (nextKind),
// until the nominal end. A fault that is not recovered from ends the
// injection (the run then fails).
func (fr *injector) inject() {
	defer close(fr.done)
	endAt := fr.startAt.Add(fr.s.Duration)
	for n := 1; ; n++ {
		wait := time.Duration((0.5 + fr.rng.Float64()) * float64(fr.s.Every))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-fr.stopNew:
			t.Stop()
			return
		case <-fr.abort:
			t.Stop()
			return
		}
		if time.Until(endAt) < fr.s.SessionTimeout+time.Second {
			return // too close to the end to see a recovery
		}
		kind := fr.nextKind()
		ev := &Event{Impl: fr.impl, N: n, Kind: kind}
		if f := fr.faults()[kind]; f != nil {
			f(ev)
		}
		fr.out.Events = append(fr.out.Events, ev)
		if ev.Failure != "" {
			return
		}
		fr.awaitRecovery(ev)
		if (ev.Kind == Expire || ev.Kind == Pause) && ev.Recovered {
			// Its new acquisition needed a new session, so its progress
			// report already counts the expiry, if there was one.
			fr.mu.Lock()
			expired := fr.expired[ev.target] > ev.expiredBefore
			fr.mu.Unlock()
			ev.SessionExpired = &expired
		}
		if !ev.Recovered {
			return
		}
	}
}

// awaitRecovery waits until every affected worker has reported an
// acquisition after ev.ref, at most the session timeout plus RecoveryBound.
// (The exact recovery times are read from the records after the run.)
func (fr *injector) awaitRecovery(ev *Event) {
	limit := fr.s.SessionTimeout + RecoveryBound
	deadline := time.Now().Add(limit - time.Duration(exclusion.Now()-ev.ref))
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		fr.mu.Lock()
		ok := true
		for _, p := range ev.affected {
			ok = ok && fr.last[p] > ev.ref
		}
		fr.mu.Unlock()
		if ok {
			ev.Recovered = true
			return
		}
		if time.Now().After(deadline) {
			ev.Failure = fmt.Sprintf("not recovered: %s did not acquire again within %v (session timeout + %v) of the fault's healing",
				fr.describeProcs(ev.affected), limit, RecoveryBound)
			return
		}
		select {
		case <-tick.C:
		case <-fr.abort:
			ev.Failure = "the run failed before the fault was recovered from"
			return
		}
	}
}

func (fr *injector) describeProcs(procs []int) string {
	if len(procs) == 1 {
		return fmt.Sprintf("worker %d", procs[0])
	}
	s := make([]string, len(procs))
	for i, p := range procs {
		s[i] = fmt.Sprint(p)
	}
	return "workers " + strings.Join(s, ", ")
}

// pick returns a random worker slot and its current process.
func (fr *injector) pick() (slot, proc int) {
	slot = fr.rng.IntN(fr.s.Procs)
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return slot, fr.slotProc[slot]
}

func (fr *injector) workerTarget(slot, proc int) string {
	w := fr.f.Get(proc)
	return fmt.Sprintf("worker %d (slot %d, pid %d)", proc, slot, w.Pid())
}

// waitEvent waits up to d for a message of type typ from proc; nil if none
// came.
func (fr *injector) waitEvent(proc int, typ proto.MsgType, d time.Duration) *proto.Message {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case m := <-fr.events:
			if m.Proc == proc && m.Type == typ {
				return &m.Message
			}
		case <-t.C:
			return nil
		case <-fr.abort:
			return nil
		}
	}
}

// drainEvents drops messages left from an earlier fault.
func (fr *injector) drainEvents() {
	for {
		select {
		case <-fr.events:
		default:
			return
		}
	}
}

// lingerOn asks worker proc to keep its next hold until it is lost and
// waits until it holds; nil if it did not within d (the request is then
// withdrawn).
func (fr *injector) lingerOn(proc int, d time.Duration) *proto.Message {
	return fr.lingerWith(proc, proto.Linger, d)
}

// lingerWith is lingerOn with the request cmd (proto.Linger or
// proto.LingerPause).
func (fr *injector) lingerWith(proc int, cmd proto.Command, d time.Duration) *proto.Message {
	fr.drainEvents()
	w := fr.f.Get(proc)
	w.Send(cmd)
	m := fr.waitEvent(proc, proto.Holding, d)
	if m == nil {
		w.Send(proto.Unlinger)
	}
	return m
}

// noteHolder notes in ev what a worker that held a lock when the fault
// hit reported (m: its proto.Lingered, nil if none came): when it saw its hold
// lost and why. A holder that did not see the loss is a failure.
func (fr *injector) noteHolder(ev *Event, proc int, m *proto.Message, within time.Duration) {
	if m == nil {
		fr.f.Get(proc).Send(proto.Unlinger)
		ev.Failure = fmt.Sprintf("the holder (worker %d) did not see its hold lost within %v", proc, within)
		return
	}
	if m.Cause == "" {
		ev.Failure = fmt.Sprintf("the holder (worker %d) left its hold without seeing it lost", proc)
		return
	}
	s := float64(m.At-ev.start) / 1e9
	ev.HolderLossSec, ev.HolderCause = &s, m.Cause
}

// allLive is every live worker process.
func (fr *injector) allLive() []int { return fr.f.Live() }

// healCtx bounds a server restart; it does not end with the run's context,
// so that a fault is healed even when the run is interrupted.
func healCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 90*time.Second)
}

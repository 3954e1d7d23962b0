package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/stress/internal/record"
)

// The faults -fault can inject.
const (
	faultRestart = "restart" // SIGKILL a server (standalone, or a follower of an ensemble) and restart it with its data
	faultLeader  = "leader"  // SIGKILL the ensemble's leader, restart it once another leads
	faultExpire  = "expire"  // freeze one worker's connections past its session timeout
	faultDrop    = "drop"    // cut one worker's connections
	faultKill    = "kill"    // SIGKILL one worker (preferably holding a lock) and start a replacement
	// partition cuts a follower (preferably the holder's server) from its
	// peers while its clients stay connected.
	faultPartition = "partition"
	faultReset     = "reset" // TCP resets of one worker's connections, at random moments
	faultFlood     = "flood" // expire a worker's session while it waits for floodLocks locks
	faultStall     = "stall" // block one worker's writes while the server's bytes flow
)

// recoveryBound is how long, beyond the session timeout, the workers a
// fault hit may take to acquire again once the fault was healed. A fault
// not recovered from within that time fails the run.
const recoveryBound = 15 * time.Second

// faultEvent is one injected fault: the fault log's line.
type faultEvent struct {
	Impl    string `json:"impl"`
	N       int    `json:"n"`
	Kind    string `json:"kind"`
	Variant string `json:"variant"`
	Target  string `json:"target"`
	// Seconds since the run started.
	AtSec float64 `json:"at_s"`
	// The rest are seconds since the fault started. Healed: the healing
	// action was done (server restarted, connections released, replacement
	// worker started; 0 for a drop).
	HealedSec float64 `json:"healed_s"`
	// Next acquisition by any worker; -1: none.
	RecoveryAnySec float64 `json:"recovery_any_s"`
	// The affected worker's next acquisition after the fault was healed (for
	// a server fault: the last of the workers; for leader: after a new
	// leader was elected; for kill: the replacement's first); -1: none.
	RecoveryOwnSec float64 `json:"recovery_affected_s"`
	Recovered      bool    `json:"recovered"`
	// A fault put on a worker while it held a lock: when the holder saw
	// its hold lost, and why.
	HolderLossSec *float64 `json:"holder_saw_loss_s,omitempty"`
	HolderCause   string   `json:"holder_loss_cause,omitempty"`
	// expire: whether the worker's session did expire.
	SessionExpired *bool  `json:"session_expired,omitempty"`
	Note           string `json:"note,omitempty"`
	Failure        string `json:"failure,omitempty"`

	start, healed, ref int64 // shared clock; recovery of the affected workers counts from ref
	affected           []int // processes
	target             int   // expire: the worker process frozen
	expiredBefore      int64 // expire: its session expiries before
}

// faultRun injects faults into one implementation's run and drives the run
// meanwhile: the parent's loop reads the workers' messages, the injector
// goroutine injects one fault at a time, heals it, and waits until the
// workers it hit acquire again before it waits for the next.
type faultRun struct {
	r       *runner
	run     *implRun
	f       *fleet
	cfg     config
	rng     *rand.Rand
	startAt time.Time
	replace func(proc, slot int) (*workerProc, error)

	events  chan procMsg  // ready, holding, lingered: for the injector
	stopNew chan struct{} // closed at the nominal end: no new fault
	abort   chan struct{} // closed when the run fails: heal and stop
	done    chan struct{} // closed when the injector returned

	mu       sync.Mutex
	last     map[int]int64 // process: latest enter time it reported
	expired  map[int]int64 // process: session expiries it reported
	losses   map[int]int64 // process: holds lost, as it reported
	slotProc []int         // slot: its current process
}

func newFaultRun(r *runner, run *implRun, f *fleet, start time.Time, replace func(proc, slot int) (*workerProc, error)) *faultRun {
	fr := &faultRun{
		r: r, run: run, f: f, cfg: r.cfg, startAt: start, replace: replace,
		// The same seed gives every implementation the same schedule.
		rng:     rand.New(rand.NewPCG(uint64(r.cfg.FaultSeed), 0x746965726c6f636b)),
		events:  make(chan procMsg, 64),
		stopNew: make(chan struct{}),
		abort:   make(chan struct{}),
		done:    make(chan struct{}),
		last:    map[int]int64{},
		expired: map[int]int64{},
		losses:  map[int]int64{},
	}
	run.killed = map[int32]int64{}
	for i := range r.cfg.Procs {
		fr.slotProc = append(fr.slotProc, i)
	}
	return fr
}

// drive runs until the nominal end, extended while a fault is being
// recovered from, then stops the workers and waits for their "done".
func (fr *faultRun) drive(ctx context.Context, onProgress func(procMsg)) (interrupted bool, err error) {
	go fr.inject()
	defer func() {
		if err != nil {
			close(fr.abort)
		}
		<-fr.done // whatever happened, faults are healed before the run ends
	}()
	end := time.NewTimer(fr.cfg.Duration)
	defer end.Stop()
	hard := time.NewTimer(fr.cfg.Timeout)
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
		if stopping {
			all := true
			for _, p := range fr.f.live() {
				all = all && doneFrom[p]
			}
			if all {
				return interrupted, nil
			}
		}
		select {
		case m := <-fr.f.msgs:
			switch {
			case m.eof:
				if fr.f.eof(m.proc) {
					continue // killed on purpose
				}
				return interrupted, fmt.Errorf("%w: %s", errRun, fr.f.get(m.proc).describe())
			case m.msg.Type == "error":
				return interrupted, fmt.Errorf("%w: worker %d: %s", errRun, m.proc, m.msg.Err)
			case m.msg.Type == "progress":
				fr.mu.Lock()
				fr.last[m.proc] = max(fr.last[m.proc], m.msg.Last)
				fr.expired[m.proc] = max(fr.expired[m.proc], m.msg.Expired)
				fr.losses[m.proc] = max(fr.losses[m.proc], m.msg.Losses)
				fr.mu.Unlock()
				onProgress(m)
			case m.msg.Type == "done":
				doneFrom[m.proc] = true
			case m.msg.Type == "ready" || m.msg.Type == "holding" || m.msg.Type == "lingered" ||
				m.msg.Type == "flooding" || m.msg.Type == "flooded":
				select {
				case fr.events <- m:
				default: // nobody waits for it
				}
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
				return interrupted, fmt.Errorf("%w: workers did not finish within %v (-timeout) and 30s more", errRun, fr.cfg.Timeout)
			}
			// -timeout: stop now, even amid a fault.
			interrupted, ending, finished = true, true, true
			stopNew.Do(func() { close(fr.stopNew) })
			hard.Reset(30 * time.Second)
		}
		if ending && finished && !stopping {
			stopping = true
			fr.f.broadcast(cmdStop)
		}
	}
}

// inject is the injector goroutine: faults one after the other, each after
// a random pause (uniform between half and one and a half -fault-every),
// until the nominal end. A fault that is not recovered from ends the
// injection (the run then fails).
func (fr *faultRun) inject() {
	defer close(fr.done)
	endAt := fr.startAt.Add(fr.cfg.Duration)
	for n := 1; ; n++ {
		wait := time.Duration((0.5 + fr.rng.Float64()) * float64(fr.cfg.FaultEvery))
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
		if time.Until(endAt) < fr.cfg.SessionTimeout+time.Second {
			return // too close to the end to see a recovery
		}
		kind := fr.cfg.Faults[fr.rng.IntN(len(fr.cfg.Faults))]
		ev := &faultEvent{Impl: fr.run.name, N: n, Kind: kind}
		switch kind {
		case faultRestart:
			fr.restart(ev)
		case faultLeader:
			fr.leader(ev)
		case faultExpire:
			fr.expire(ev)
		case faultDrop:
			fr.drop(ev)
		case faultKill:
			fr.kill(ev)
		case faultPartition:
			fr.partition(ev)
		case faultReset:
			fr.reset(ev)
		case faultFlood:
			fr.flood(ev)
		case faultStall:
			fr.stall(ev)
		}
		fr.run.faults = append(fr.run.faults, ev)
		if ev.Failure != "" {
			return
		}
		fr.awaitRecovery(ev)
		if ev.Kind == faultExpire && ev.Recovered {
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

func (fr *faultRun) since(t int64) float64 { return float64(t-fr.run.start) / 1e9 }

// awaitRecovery waits until every affected worker has reported an
// acquisition after ev.ref, at most the session timeout plus recoveryBound.
// (The exact recovery times are read from the records after the run.)
func (fr *faultRun) awaitRecovery(ev *faultEvent) {
	limit := fr.cfg.SessionTimeout + recoveryBound
	deadline := time.Now().Add(limit - time.Duration(record.Now()-ev.ref))
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
				fr.describeProcs(ev.affected), limit, recoveryBound)
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

func (fr *faultRun) describeProcs(procs []int) string {
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
func (fr *faultRun) pick() (slot, proc int) {
	slot = fr.rng.IntN(fr.cfg.Procs)
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return slot, fr.slotProc[slot]
}

func (fr *faultRun) workerTarget(slot, proc int) string {
	w := fr.f.get(proc)
	return fmt.Sprintf("worker %d (slot %d, pid %d)", proc, slot, w.cmd.Process.Pid)
}

// waitEvent waits up to d for a message of type typ from proc; nil if none
// came.
func (fr *faultRun) waitEvent(proc int, typ string, d time.Duration) *message {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case m := <-fr.events:
			if m.proc == proc && m.msg.Type == typ {
				return &m.msg
			}
		case <-t.C:
			return nil
		case <-fr.abort:
			return nil
		}
	}
}

// drainEvents drops messages left from an earlier fault.
func (fr *faultRun) drainEvents() {
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
func (fr *faultRun) lingerOn(proc int, d time.Duration) *message {
	fr.drainEvents()
	w := fr.f.get(proc)
	w.send(cmdLinger)
	m := fr.waitEvent(proc, "holding", d)
	if m == nil {
		w.send(cmdUnlinger)
	}
	return m
}

// noteHolder notes in ev what a worker that held a lock when the fault
// hit reported (m: its "lingered", nil if none came): when it saw its hold
// lost and why. A holder that did not see the loss is a failure.
func (fr *faultRun) noteHolder(ev *faultEvent, proc int, m *message, within time.Duration) {
	if m == nil {
		fr.f.get(proc).send(cmdUnlinger)
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
func (fr *faultRun) allLive() []int { return fr.f.live() }

// healCtx bounds a server restart; it does not end with the run's context,
// so that a fault is healed even when the run is interrupted.
func healCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 90*time.Second)
}

// restart SIGKILLs a server and restarts it with its data: the standalone
// server, or a random follower of an ensemble.
func (fr *faultRun) restart(ev *faultEvent) {
	c := fr.r.cluster
	ctx, cancel := healCtx()
	defer cancel()
	m := 0
	ev.Variant = "standalone server"
	if c.Size() > 1 {
		leader, _ := c.Leader(ctx)
		var others []int
		for i := range c.Size() {
			if i != leader {
				others = append(others, i)
			}
		}
		m, ev.Variant = others[fr.rng.IntN(len(others))], "follower"
	}
	ev.Target = fmt.Sprintf("server %d (%s, pid %d)", m, c.Addr(m), c.Pid(m))
	ev.affected = fr.allLive()
	fr.run.countersOff = true
	ev.start = record.Now()
	if err := c.Kill(m); err != nil {
		ev.Failure = fmt.Sprintf("kill: %v", err)
		return
	}
	if err := c.Restart(ctx, m); err != nil {
		ev.Failure = fmt.Sprintf("restart: %v", err)
		return
	}
	ev.healed = record.Now()
	ev.ref = ev.healed
	ev.Note = fmt.Sprintf("server down %.2fs", float64(ev.healed-ev.start)/1e9)
}

// leader SIGKILLs the ensemble's leader, waits until another member leads,
// keeps the old leader down a little longer, and restarts it. The workers
// must acquire again once a new leader is elected.
func (fr *faultRun) leader(ev *faultEvent) {
	c := fr.r.cluster
	ctx, cancel := healCtx()
	defer cancel()
	ev.Variant = fmt.Sprintf("ensemble of %d", c.Size())
	old, err := waitLeader(ctx, c.Leader, -1)
	if err != nil {
		ev.Failure = fmt.Sprintf("no leader to kill: %v", err)
		return
	}
	ev.Target = fmt.Sprintf("server %d (%s, pid %d)", old, c.Addr(old), c.Pid(old))
	ev.affected = fr.allLive()
	fr.run.countersOff = true
	ev.start = record.Now()
	if err := c.Kill(old); err != nil {
		ev.Failure = fmt.Sprintf("kill: %v", err)
		return
	}
	nl, err := waitLeader(ctx, c.Leader, old)
	ev.ref = record.Now()
	if err != nil {
		ev.Failure = fmt.Sprintf("no new leader: %v", err)
	}
	// The old leader stays down a little longer while the others serve.
	time.Sleep(time.Duration(500+fr.rng.IntN(1500)) * time.Millisecond)
	if err := c.Restart(ctx, old); err != nil && ev.Failure == "" {
		ev.Failure = fmt.Sprintf("restart: %v", err)
	}
	ev.healed = record.Now()
	if ev.Failure == "" {
		ev.Note = fmt.Sprintf("server %d led after %.2fs; old leader back after %.2fs",
			nl, float64(ev.ref-ev.start)/1e9, float64(ev.healed-ev.start)/1e9)
	}
}

// waitLeader polls until a member other than not leads.
func waitLeader(ctx context.Context, leader func(context.Context) (int, error), not int) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		i, err := leader(ctx)
		if err == nil && i != not {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// expire freezes the connections of one worker, preferably while it holds
// a lock, for longer than the session timeout: the server expires the
// session while the process lives on. The holder must see its hold lost
// while frozen (the client notices the silence at two thirds of the
// session timeout, before the server can expire the session), and nobody
// may enter before it left, which the checker verifies on the records.
func (fr *faultRun) expire(ev *faultEvent) {
	slot, proc := fr.pick()
	ev.Target = fr.workerTarget(slot, proc)
	ev.affected, ev.target = []int{proc}, proc
	fr.mu.Lock()
	ev.expiredBefore = fr.expired[proc]
	fr.mu.Unlock()
	holding := fr.lingerOn(proc, 5*time.Second)
	ev.Variant = "holder frozen"
	if holding == nil {
		ev.Variant = "frozen (no hold within 5s)"
	}
	freeze := fr.cfg.SessionTimeout + time.Second + time.Duration(fr.rng.IntN(1000))*time.Millisecond
	ev.start = record.Now()
	until := time.Now().Add(freeze)
	for _, p := range fr.r.proxies[slot] {
		p.Pause()
	}
	var seen *message
	if holding != nil {
		seen = fr.waitEvent(proc, "lingered", freeze)
	}
	t := time.NewTimer(time.Until(until))
	select {
	case <-t.C:
	case <-fr.abort:
	}
	t.Stop()
	for _, p := range fr.r.proxies[slot] {
		p.Resume()
	}
	ev.healed = record.Now()
	ev.ref = ev.healed
	ev.Note = fmt.Sprintf("frozen %.2fs", float64(ev.healed-ev.start)/1e9)
	if holding == nil {
		return
	}
	late := false
	if seen == nil {
		seen = fr.waitEvent(proc, "lingered", 2*time.Second)
		late = seen != nil
	}
	fr.noteHolder(ev, proc, seen, freeze+2*time.Second)
	if late && ev.Failure == "" {
		ev.Failure = fmt.Sprintf("the holder saw its hold lost only %.2fs after the freeze began, after it ended", *ev.HolderLossSec)
	}
}

// drop cuts one worker's connections: half the time while it holds a lock
// (it must see the hold lost), else at a random moment, sometimes right
// after a few bytes towards the server, between a request and its reply.
func (fr *faultRun) drop(ev *faultEvent) {
	slot, proc := fr.pick()
	ev.Target = fr.workerTarget(slot, proc)
	ev.affected = []int{proc}
	proxies := fr.r.proxies[slot]
	switch r := fr.rng.Float64(); {
	case r < 0.5:
		holding := fr.lingerOn(proc, 5*time.Second)
		ev.Variant = "holder's connection dropped"
		if holding == nil {
			ev.Variant = "connection dropped (no hold within 5s)"
		}
		ev.start = record.Now()
		for _, p := range proxies {
			p.DropAll()
		}
		ev.healed, ev.ref = ev.start, ev.start
		if holding != nil {
			within := fr.cfg.SessionTimeout + 2*time.Second
			fr.noteHolder(ev, proc, fr.waitEvent(proc, "lingered", within), within)
		}
	case r < 0.75:
		ev.Variant = "connection dropped"
		ev.start = record.Now()
		for _, p := range proxies {
			p.DropAll()
		}
		ev.healed, ev.ref = ev.start, ev.start
	default:
		n := 1 + fr.rng.IntN(120)
		ev.Variant = fmt.Sprintf("dropped after %d bytes to the server", n)
		var armed []*faultproxy.Proxy
		for _, p := range proxies {
			if p.Stats().Active > 0 {
				armed = append(armed, p)
			}
		}
		if armed == nil {
			armed = proxies
		}
		dropped := func() (n int64) {
			for _, p := range armed {
				n += p.Stats().Dropped
			}
			return n
		}
		before := dropped()
		ev.start = record.Now()
		for _, p := range armed {
			p.DropAfter(n)
		}
		deadline := time.Now().Add(5 * time.Second)
		fired := false
		for !fired && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
			fired = dropped() > before
		}
		for _, p := range proxies {
			p.DropAfter(0)
		}
		ev.healed = record.Now()
		ev.ref = ev.healed
		if fired {
			ev.Note = fmt.Sprintf("fired after %.3fs", float64(ev.healed-ev.start)/1e9)
		} else {
			ev.Note = "did not fire within 5s (no traffic): disarmed"
		}
	}
}

// kill SIGKILLs one worker, two times in three while it holds a lock, and
// starts a replacement in its slot. The killed holder's hold is cut at the
// moment its process was known dead (check.Options.Killed): nobody may
// enter before, and others get the lock once its session expired.
func (fr *faultRun) kill(ev *faultEvent) {
	slot, proc := fr.pick()
	w := fr.f.get(proc)
	ev.Target = fr.workerTarget(slot, proc)
	var holding *message
	ev.Variant = "killed at a random moment"
	if fr.rng.IntN(3) < 2 {
		ev.Variant = "holder killed"
		if holding = fr.lingerOn(proc, 5*time.Second); holding == nil {
			ev.Variant = "killed (no hold within 5s)"
		}
	}
	ev.start = record.Now()
	fr.f.markKilled(proc)
	w.kill()
	select {
	case <-w.exited:
	case <-time.After(10 * time.Second):
		ev.Failure = fmt.Sprintf("worker %d did not die within 10s of SIGKILL", proc)
		return
	}
	fr.run.killed[int32(proc)] = record.Now()
	// A killed worker sends no result: count what its last progress report
	// said (collect adds the live workers' results).
	fr.mu.Lock()
	fr.run.losses += fr.losses[proc]
	fr.run.expiries += fr.expired[proc]
	fr.mu.Unlock()

	np, nw, err := fr.f.start(func(np int) (*workerProc, error) { return fr.replace(np, slot) })
	if err != nil {
		ev.Failure = fmt.Sprintf("replacement worker: %v", err)
		return
	}
	fr.mu.Lock()
	fr.slotProc[slot] = np
	fr.mu.Unlock()
	ev.affected = []int{np}
	if fr.waitEvent(np, "ready", fr.cfg.ConnectTimeout+30*time.Second) == nil {
		ev.Failure = fmt.Sprintf("replacement worker %d not ready within %v", np, fr.cfg.ConnectTimeout+30*time.Second)
		return
	}
	nw.send(cmdGo)
	ev.healed = record.Now()
	ev.ref = ev.healed
	ev.Note = fmt.Sprintf("dead after %.3fs; replaced by worker %d (pid %d)",
		float64(fr.run.killed[int32(proc)]-ev.start)/1e9, np, nw.cmd.Process.Pid)
	if holding != nil {
		ev.Note += fmt.Sprintf("; it held lock-%d (token %d)", holding.Path, holding.Token)
	}
}

// measureRecovery computes the fault log's recovery times from the checked
// holds and decides, from them, whether each fault was recovered from.
func measureRecovery(run *implRun, session time.Duration) {
	if len(run.faults) == 0 {
		return
	}
	var all []int64
	per := map[int][]int64{}
	for _, h := range run.holds {
		all = append(all, h.Enter)
		per[int(h.Proc)] = append(per[int(h.Proc)], h.Enter)
	}
	slices.Sort(all)
	for _, s := range per {
		slices.Sort(s)
	}
	// next is the first time in sorted s after t, or -1.
	next := func(s []int64, t int64) int64 {
		i := sort.Search(len(s), func(i int) bool { return s[i] > t })
		if i == len(s) {
			return -1
		}
		return s[i]
	}
	sec := func(d int64) float64 { return float64(d) / 1e9 }
	limit := session + recoveryBound
	for _, ev := range run.faults {
		ev.RecoveryAnySec, ev.RecoveryOwnSec = -1, -1
		if ev.start == 0 {
			ev.Recovered = false
			continue // never injected
		}
		ev.AtSec = sec(ev.start - run.start)
		if ev.healed != 0 {
			ev.HealedSec = sec(ev.healed - ev.start)
		}
		if t := next(all, ev.start); t >= 0 {
			ev.RecoveryAnySec = sec(t - ev.start)
		}
		own, ok := int64(0), len(ev.affected) > 0 && ev.ref != 0
		for _, p := range ev.affected {
			t := next(per[p], ev.ref)
			if t < 0 {
				ok = false
				break
			}
			own = max(own, t)
		}
		if ok {
			ev.RecoveryOwnSec = sec(own - ev.start)
		}
		ev.Recovered = ok && time.Duration(own-ev.ref) <= limit
		if !ev.Recovered && ev.Failure == "" {
			ev.Failure = fmt.Sprintf("not recovered: the worker(s) it hit did not acquire within %v of its healing", limit)
		}
	}
}

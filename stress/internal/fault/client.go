package fault

import (
	"fmt"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// expire freezes the connections of one worker, preferably while it holds
// a lock, for longer than the session timeout: the server expires the
// session while the process lives on. The holder must see its hold lost
// while frozen (the client notices the silence at two thirds of the
// session timeout, before the server can expire the session), and nobody
// may enter before it left, which the checker verifies on the records.
func (fr *injector) expire(ev *Event) {
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
	freeze := fr.s.SessionTimeout + time.Second + time.Duration(fr.rng.IntN(1000))*time.Millisecond
	ev.start = exclusion.Now()
	until := time.Now().Add(freeze)
	for _, p := range fr.tg.Proxies[slot] {
		p.Pause()
	}
	var seen *proto.Message
	if holding != nil {
		seen = fr.waitEvent(proc, proto.Lingered, freeze)
	}
	t := time.NewTimer(time.Until(until))
	select {
	case <-t.C:
	case <-fr.abort:
	}
	t.Stop()
	for _, p := range fr.tg.Proxies[slot] {
		p.Resume()
	}
	ev.healed = exclusion.Now()
	ev.ref = ev.healed
	ev.Note = fmt.Sprintf("frozen %.2fs", float64(ev.healed-ev.start)/1e9)
	if holding == nil {
		return
	}
	late := false
	if seen == nil {
		seen = fr.waitEvent(proc, proto.Lingered, 2*time.Second)
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
func (fr *injector) drop(ev *Event) {
	slot, proc := fr.pick()
	ev.Target = fr.workerTarget(slot, proc)
	ev.affected = []int{proc}
	proxies := fr.tg.Proxies[slot]
	switch r := fr.rng.Float64(); {
	case r < 0.5:
		holding := fr.lingerOn(proc, 5*time.Second)
		ev.Variant = "holder's connection dropped"
		if holding == nil {
			ev.Variant = "connection dropped (no hold within 5s)"
		}
		ev.start = exclusion.Now()
		for _, p := range proxies {
			p.DropAll()
		}
		ev.healed, ev.ref = ev.start, ev.start
		if holding != nil {
			within := fr.s.SessionTimeout + 2*time.Second
			fr.noteHolder(ev, proc, fr.waitEvent(proc, proto.Lingered, within), within)
		}
	case r < 0.75:
		ev.Variant = "connection dropped"
		ev.start = exclusion.Now()
		for _, p := range proxies {
			p.DropAll()
		}
		ev.healed, ev.ref = ev.start, ev.start
	default:
		n := 1 + fr.rng.IntN(120)
		ev.Variant = fmt.Sprintf("dropped after %d bytes to the server", n)
		armed := active(proxies)
		dropped := func() (n int64) {
			for _, p := range armed {
				n += p.Stats().Dropped
			}
			return n
		}
		before := dropped()
		ev.start = exclusion.Now()
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
		ev.healed = exclusion.Now()
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
// moment its process was known dead (exclusion.Options.Killed): nobody may
// enter before, and others get the lock once its session expired.
func (fr *injector) kill(ev *Event) {
	slot, proc := fr.pick()
	w := fr.f.Get(proc)
	ev.Target = fr.workerTarget(slot, proc)
	var holding *proto.Message
	ev.Variant = "killed at a random moment"
	if fr.rng.IntN(3) < 2 {
		ev.Variant = "holder killed"
		if holding = fr.lingerOn(proc, 5*time.Second); holding == nil {
			ev.Variant = "killed (no hold within 5s)"
		}
	}
	ev.start = exclusion.Now()
	fr.f.Kill(proc)
	select {
	case <-w.Exited():
	case <-time.After(10 * time.Second):
		ev.Failure = fmt.Sprintf("worker %d did not die within 10s of SIGKILL", proc)
		return
	}
	fr.out.Killed[int32(proc)] = exclusion.Now()
	// A killed worker sends no result: count what its last progress report
	// said (collect adds the live workers' results).
	fr.mu.Lock()
	fr.out.Losses += fr.losses[proc]
	fr.out.Expiries += fr.expired[proc]
	fr.mu.Unlock()

	nw, err := fr.f.Replace(proc, func(np int) proto.Task { return fr.tg.NewTask(np, slot) })
	if err != nil {
		ev.Failure = fmt.Sprintf("replacement worker: %v", err)
		return
	}
	np := nw.Index
	fr.mu.Lock()
	fr.slotProc[slot] = np
	fr.mu.Unlock()
	ev.affected = []int{np}
	if fr.waitEvent(np, proto.Ready, fr.s.ConnectTimeout+30*time.Second) == nil {
		ev.Failure = fmt.Sprintf("replacement worker %d not ready within %v", np, fr.s.ConnectTimeout+30*time.Second)
		return
	}
	nw.Send(proto.Go)
	ev.healed = exclusion.Now()
	ev.ref = ev.healed
	ev.Note = fmt.Sprintf("dead after %.3fs; replaced by worker %d (pid %d)",
		float64(fr.out.Killed[int32(proc)]-ev.start)/1e9, np, nw.Pid())
	if holding != nil {
		ev.Note += fmt.Sprintf("; it held lock-%d (token %d)", holding.Path, holding.Token)
	}
}

// reset resets one worker's connections with TCP resets (SO_LINGER 0):
// while it holds a lock (it must see the hold lost), at a random moment,
// after a few bytes towards the server (between a request and its reply),
// or right as a holder releases (between a release and its delete).
func (fr *injector) reset(ev *Event) {
	slot, proc := fr.pick()
	ev.Target = fr.workerTarget(slot, proc)
	ev.affected = []int{proc}
	proxies := fr.tg.Proxies[slot]
	resetAll := func() {
		for _, p := range proxies {
			p.Reset()
		}
	}
	switch r := fr.rng.Float64(); {
	case r < 0.3:
		holding := fr.lingerOn(proc, 5*time.Second)
		ev.Variant = "holder's connection reset"
		if holding == nil {
			ev.Variant = "connection reset (no hold within 5s)"
		}
		ev.start = exclusion.Now()
		resetAll()
		ev.healed, ev.ref = ev.start, ev.start
		if holding != nil {
			within := fr.s.SessionTimeout + 2*time.Second
			fr.noteHolder(ev, proc, fr.waitEvent(proc, proto.Lingered, within), within)
		}
	case r < 0.5:
		ev.Variant = "connection reset at a random moment"
		time.Sleep(time.Duration(fr.rng.IntN(200)) * time.Millisecond)
		ev.start = exclusion.Now()
		resetAll()
		ev.healed, ev.ref = ev.start, ev.start
	default:
		release := r >= 0.75
		n := 1 + fr.rng.IntN(120)
		ev.Variant = fmt.Sprintf("reset after %d bytes to the server", n)
		var holding *proto.Message
		if release {
			if holding = fr.lingerOn(proc, 5*time.Second); holding != nil {
				ev.Variant = fmt.Sprintf("holder released, reset after %d bytes of the release", n)
			}
		}
		armed := proxies
		if holding == nil {
			armed = active(proxies)
		}
		resets := func() (n int64) {
			for _, p := range armed {
				n += p.Stats().Reset
			}
			return n
		}
		before := resets()
		ev.start = exclusion.Now()
		for _, p := range armed {
			p.ResetAfter(n)
		}
		if holding != nil {
			fr.f.Get(proc).Send(proto.Unlinger)
		}
		fired := fr.waitFor(5*time.Second, func() bool { return resets() > before })
		for _, p := range proxies {
			p.ResetAfter(0)
		}
		ev.healed = exclusion.Now()
		ev.ref = ev.healed
		if fired {
			ev.Note = fmt.Sprintf("fired after %.3fs", float64(ev.healed-ev.start)/1e9)
		} else {
			ev.Note = "did not fire within 5s (no traffic): disarmed"
		}
	}
}

// waitFor polls cond every 2ms for at most d.
func (fr *injector) waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		select {
		case <-fr.abort:
			return false
		case <-time.After(2 * time.Millisecond):
		}
	}
	return cond()
}

// stall blocks one worker's writes (its bytes are not read, so its socket
// buffers fill and its writes block) while the server's bytes still reach
// it, preferably while it holds a lock, for longer than the session
// timeout: the server expires the session, and the holder must have seen
// its loss before anyone else was granted the path.
func (fr *injector) stall(ev *Event) {
	fr.freeze(ev, "stalled", func(p *faultproxy.Proxy) { p.Stall() }, func(p *faultproxy.Proxy) { p.Unstall() })
}

// freeze applies on to one worker's proxies (preferably while it holds a
// lock) for the session timeout + 1s..2s, then off; the holder must see its
// loss while the fault lasts.
func (fr *injector) freeze(ev *Event, what string, on, off func(*faultproxy.Proxy)) {
	slot, proc := fr.pick()
	ev.Target = fr.workerTarget(slot, proc)
	ev.affected, ev.target = []int{proc}, proc
	holding := fr.lingerOn(proc, 5*time.Second)
	ev.Variant = "holder " + what
	if holding == nil {
		ev.Variant = what + " (no hold within 5s)"
	}
	d := fr.s.SessionTimeout + time.Second + time.Duration(fr.rng.IntN(1000))*time.Millisecond
	ev.start = exclusion.Now()
	until := time.Now().Add(d)
	for _, p := range fr.tg.Proxies[slot] {
		on(p)
	}
	var seen *proto.Message
	if holding != nil {
		seen = fr.waitEvent(proc, proto.Lingered, d)
	}
	t := time.NewTimer(time.Until(until))
	select {
	case <-t.C:
	case <-fr.abort:
	}
	t.Stop()
	for _, p := range fr.tg.Proxies[slot] {
		off(p)
	}
	ev.healed = exclusion.Now()
	ev.ref = ev.healed
	ev.Note = fmt.Sprintf("%s %.2fs", what, float64(ev.healed-ev.start)/1e9)
	if holding == nil {
		return
	}
	late := false
	if seen == nil {
		seen = fr.waitEvent(proc, proto.Lingered, 2*time.Second)
		late = seen != nil
	}
	fr.noteHolder(ev, proc, seen, d+2*time.Second)
	if late && ev.Failure == "" {
		ev.Failure = fmt.Sprintf("the holder saw its hold lost only %.2fs after the fault began, after it ended", *ev.HolderLossSec)
	}
}

// active returns the proxies that carry a connection now (the worker's
// current server), or all of them when none does.
func active(proxies []*faultproxy.Proxy) []*faultproxy.Proxy {
	var out []*faultproxy.Proxy
	for _, p := range proxies {
		if p.Stats().Active > 0 {
			out = append(out, p)
		}
	}
	if out == nil {
		return proxies
	}
	return out
}

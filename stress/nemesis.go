package main

import (
	"fmt"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/stress/internal/record"
)

// The faults of issue 9's nemesis: partition, reset, flood, stall. Like
// the others they prefer a worker that holds a lock (cmdLinger), which
// must see its hold lost; the checker then verifies on the records that it
// saw so before any other process was granted the path (late-loss).

// partition cuts a follower of the ensemble from its peers (every
// server-to-server connection passes a proxy stress controls, see
// zkserver.WithPeerProxies) while its clients stay connected to it,
// preferably the follower a lingering holder is connected to. The follower
// goes on answering its clients until syncLimit ticks passed without the
// leader; the leader can expire their sessions before. The partition lasts
// until the holder saw its loss and at least the session timeout + 1s, then
// heals; every worker must acquire again.
func (fr *faultRun) partition(ev *faultEvent) {
	c := fr.r.cluster
	ctx, cancel := healCtx()
	defer cancel()
	slot, proc := fr.pick()
	holding := fr.lingerOn(proc, 5*time.Second)
	leader, err := waitLeader(ctx, c.Leader, -1)
	if err != nil {
		ev.Failure = fmt.Sprintf("no leader: %v", err)
		if holding != nil {
			fr.f.get(proc).send(cmdUnlinger)
		}
		return
	}
	on := -1 // the server the worker is connected to
	for i, p := range fr.r.proxies[slot] {
		if p.Stats().Active > 0 {
			on = i
		}
	}
	target := on
	switch {
	case holding == nil:
		ev.Variant = "a follower (no hold within 5s)"
	case on >= 0 && on != leader:
		ev.Variant = "the holder's follower"
	default:
		ev.Variant = "a follower (the holder is on the leader)"
	}
	onTarget := holding != nil && on >= 0 && on != leader
	if holding != nil && !onTarget {
		// The cut does not touch the holder: it keeps its hold.
		fr.f.get(proc).send(cmdUnlinger)
		holding = nil
	}
	if target < 0 || target == leader {
		var others []int
		for i := range c.Size() {
			if i != leader {
				others = append(others, i)
			}
		}
		target = others[fr.rng.IntN(len(others))]
	}
	ev.Target = fmt.Sprintf("server %d (%s) from its peers; holder %s", target, c.Addr(target), fr.workerTarget(slot, proc))
	ev.affected = fr.allLive()
	ev.start = record.Now()
	if err := c.PartitionMember(target); err != nil {
		ev.Failure = fmt.Sprintf("partition: %v", err)
		return
	}
	minEnd := time.Now().Add(fr.cfg.SessionTimeout + time.Second + time.Duration(fr.rng.IntN(1000))*time.Millisecond)
	var seen *message
	within := fr.cfg.SessionTimeout + 10*time.Second
	if holding != nil {
		seen = fr.waitEvent(proc, "lingered", within)
	}
	if d := time.Until(minEnd); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-fr.abort:
		}
		t.Stop()
	}
	if err := c.HealMember(target); err != nil && ev.Failure == "" {
		ev.Failure = fmt.Sprintf("heal: %v", err)
	}
	if err := c.WaitReady(ctx, target); err != nil && ev.Failure == "" {
		ev.Failure = fmt.Sprintf("server %d did not serve again: %v", target, err)
	}
	ev.healed = record.Now()
	ev.ref = ev.healed
	ev.Note = fmt.Sprintf("cut %.2fs; leader was server %d", float64(ev.healed-ev.start)/1e9, leader)
	if holding != nil && ev.Failure == "" {
		fr.noteHolder(ev, proc, seen, within)
	}
}

// reset resets one worker's connections with TCP resets (SO_LINGER 0):
// while it holds a lock (it must see the hold lost), at a random moment,
// after a few bytes towards the server (between a request and its reply),
// or right as a holder releases (between a release and its delete).
func (fr *faultRun) reset(ev *faultEvent) {
	slot, proc := fr.pick()
	ev.Target = fr.workerTarget(slot, proc)
	ev.affected = []int{proc}
	proxies := fr.r.proxies[slot]
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
		ev.start = record.Now()
		resetAll()
		ev.healed, ev.ref = ev.start, ev.start
		if holding != nil {
			within := fr.cfg.SessionTimeout + 2*time.Second
			fr.noteHolder(ev, proc, fr.waitEvent(proc, "lingered", within), within)
		}
	case r < 0.5:
		ev.Variant = "connection reset at a random moment"
		time.Sleep(time.Duration(fr.rng.IntN(200)) * time.Millisecond)
		ev.start = record.Now()
		resetAll()
		ev.healed, ev.ref = ev.start, ev.start
	default:
		release := r >= 0.75
		n := 1 + fr.rng.IntN(120)
		ev.Variant = fmt.Sprintf("reset after %d bytes to the server", n)
		var holding *message
		if release {
			if holding = fr.lingerOn(proc, 5*time.Second); holding != nil {
				ev.Variant = fmt.Sprintf("holder released, reset after %d bytes of the release", n)
			}
		}
		armed := proxies
		if holding == nil {
			armed = nil
			for _, p := range proxies {
				if p.Stats().Active > 0 {
					armed = append(armed, p)
				}
			}
			if armed == nil {
				armed = proxies
			}
		}
		resets := func() (n int64) {
			for _, p := range armed {
				n += p.Stats().Reset
			}
			return n
		}
		before := resets()
		ev.start = record.Now()
		for _, p := range armed {
			p.ResetAfter(n)
		}
		if holding != nil {
			fr.f.get(proc).send(cmdUnlinger)
		}
		fired := fr.waitFor(5*time.Second, func() bool { return resets() > before })
		for _, p := range proxies {
			p.ResetAfter(0)
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

// waitFor polls cond every 2ms for at most d.
func (fr *faultRun) waitFor(d time.Duration, cond func() bool) bool {
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
func (fr *faultRun) stall(ev *faultEvent) {
	fr.freeze(ev, "stalled", func(p *faultproxy.Proxy) { p.Stall() }, func(p *faultproxy.Proxy) { p.Unstall() })
}

// freeze applies on to one worker's proxies (preferably while it holds a
// lock) for the session timeout + 1s..2s, then off; the holder must see its
// loss while the fault lasts.
func (fr *faultRun) freeze(ev *faultEvent, what string, on, off func(*faultproxy.Proxy)) {
	slot, proc := fr.pick()
	ev.Target = fr.workerTarget(slot, proc)
	ev.affected, ev.target = []int{proc}, proc
	holding := fr.lingerOn(proc, 5*time.Second)
	ev.Variant = "holder " + what
	if holding == nil {
		ev.Variant = what + " (no hold within 5s)"
	}
	d := fr.cfg.SessionTimeout + time.Second + time.Duration(fr.rng.IntN(1000))*time.Millisecond
	ev.start = record.Now()
	until := time.Now().Add(d)
	for _, p := range fr.r.proxies[slot] {
		on(p)
	}
	var seen *message
	if holding != nil {
		seen = fr.waitEvent(proc, "lingered", d)
	}
	t := time.NewTimer(time.Until(until))
	select {
	case <-t.C:
	case <-fr.abort:
	}
	t.Stop()
	for _, p := range fr.r.proxies[slot] {
		off(p)
	}
	ev.healed = record.Now()
	ev.ref = ev.healed
	ev.Note = fmt.Sprintf("%s %.2fs", what, float64(ev.healed-ev.start)/1e9)
	if holding == nil {
		return
	}
	late := false
	if seen == nil {
		seen = fr.waitEvent(proc, "lingered", 2*time.Second)
		late = seen != nil
	}
	fr.noteHolder(ev, proc, seen, d+2*time.Second)
	if late && ev.Failure == "" {
		ev.Failure = fmt.Sprintf("the holder saw its hold lost only %.2fs after the fault began, after it ended", *ev.HolderLossSec)
	}
}

// flood makes one worker wait for floodLocks locks that its own session
// holds, then freezes its connections past the session timeout: the server
// expires the session, and on reconnecting go-zookeeper sends one event per
// watch at once while the worker's state listener is slow. Every waiter
// must end (granted in the new session, or an error) within the bound, no
// grant may come already lost, and the worker must acquire again.
func (fr *faultRun) flood(ev *faultEvent) {
	slot, proc := fr.pick()
	w := fr.f.get(proc)
	ev.Target = fr.workerTarget(slot, proc)
	ev.affected, ev.target = []int{proc}, proc
	ev.Variant = fmt.Sprintf("session expired under %d waiting locks", floodLocks)
	fr.drainEvents()
	w.send(cmdFlood)
	m := fr.waitEvent(proc, "flooding", 60*time.Second)
	if m == nil {
		w.send(cmdUnflood)
		ev.Failure = "the worker did not queue its flood within 60s"
		return
	}
	d := fr.cfg.SessionTimeout + time.Second + time.Duration(fr.rng.IntN(1000))*time.Millisecond
	ev.start = record.Now()
	for _, p := range fr.r.proxies[slot] {
		p.Pause()
	}
	t := time.NewTimer(d)
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
	w.send(cmdUnflood)
	done := fr.waitEvent(proc, "flooded", fr.cfg.SessionTimeout+recoveryBound+15*time.Second)
	switch {
	case done == nil || done.Flood == nil:
		ev.Failure = "the flooded worker did not report how its waiters ended"
	default:
		r := done.Flood
		ev.Note = fmt.Sprintf("frozen %.2fs; %d/%d queued; %d granted, %d failed, %d stuck, %d lost at once",
			float64(ev.healed-ev.start)/1e9, r.Queued, r.Waiters, r.Granted, r.Failed, r.Stuck, r.LostAtOnce)
		switch {
		case r.Err != "":
			ev.Failure = "flood: " + r.Err
		case r.Stuck > 0:
			ev.Failure = fmt.Sprintf("%d waiter(s) still blocked after the flood", r.Stuck)
		case r.LostAtOnce > 0:
			ev.Failure = fmt.Sprintf("%d grant(s) after the flood came already lost (%s)", r.LostAtOnce, r.ErrSample)
		}
	}
}

package fault

import (
	"fmt"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// flood makes one worker wait for proto.FloodLocks locks that its own session
// holds, then freezes its connections past the session timeout: the server
// expires the session, and on reconnecting go-zookeeper sends one event per
// watch at once while the worker's state listener is slow. Every waiter
// must end (granted in the new session, or an error) within the bound, no
// grant may come already lost, and the worker must acquire again.
func (fr *injector) flood(ev *Event) {
	slot, proc := fr.pick()
	w := fr.f.Get(proc)
	ev.Target = fr.workerTarget(slot, proc)
	ev.affected, ev.target = []int{proc}, proc
	ev.Variant = fmt.Sprintf("session expired under %d waiting locks", proto.FloodLocks)
	fr.drainEvents()
	w.Send(proto.Flood)
	m := fr.waitEvent(proc, proto.Flooding, 60*time.Second)
	if m == nil {
		w.Send(proto.Unflood)
		ev.Failure = "the worker did not queue its flood within 60s"
		return
	}
	d := fr.s.SessionTimeout + time.Second + time.Duration(fr.rng.IntN(1000))*time.Millisecond
	ev.start = exclusion.Now()
	for _, p := range fr.tg.Proxies[slot] {
		p.Pause()
	}
	t := time.NewTimer(d)
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
	w.Send(proto.Unflood)
	done := fr.waitEvent(proc, proto.Flooded, fr.s.SessionTimeout+RecoveryBound+15*time.Second)
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

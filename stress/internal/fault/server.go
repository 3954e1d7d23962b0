package fault

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// restart SIGKILLs a server and restarts it with its data: the standalone
// server, or a random follower of an ensemble.
func (fr *injector) restart(ev *Event) {
	c := fr.tg.Cluster
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
	fr.out.CountersOff = true
	ev.start = exclusion.Now()
	if err := c.Kill(m); err != nil {
		ev.Failure = fmt.Sprintf("kill: %v", err)
		return
	}
	if err := c.Restart(ctx, m); err != nil {
		ev.Failure = fmt.Sprintf("restart: %v", err)
		return
	}
	ev.healed = exclusion.Now()
	ev.ref = ev.healed
	ev.Note = fmt.Sprintf("server down %.2fs", float64(ev.healed-ev.start)/1e9)
}

// leader SIGKILLs the ensemble's leader, waits until another member leads,
// keeps the old leader down a little longer, and restarts it. The workers
// must acquire again once a new leader is elected.
func (fr *injector) leader(ev *Event) {
	c := fr.tg.Cluster
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
	fr.out.CountersOff = true
	ev.start = exclusion.Now()
	if err := c.Kill(old); err != nil {
		ev.Failure = fmt.Sprintf("kill: %v", err)
		return
	}
	nl, err := waitLeader(ctx, c.Leader, old)
	ev.ref = exclusion.Now()
	if err != nil {
		ev.Failure = fmt.Sprintf("no new leader: %v; %s", err, electionState(c, old))
	}
	// The old leader stays down a little longer while the others serve.
	time.Sleep(time.Duration(500+fr.rng.IntN(1500)) * time.Millisecond)
	if err := c.Restart(ctx, old); err != nil && ev.Failure == "" {
		ev.Failure = fmt.Sprintf("restart: %v", err)
	}
	ev.healed = exclusion.Now()
	if ev.Failure == "" {
		ev.Note = fmt.Sprintf("server %d led after %.2fs; old leader back after %.2fs",
			nl, float64(ev.ref-ev.start)/1e9, float64(ev.healed-ev.start)/1e9)
	}
}

// electionState says, for a failed election, what each member other than
// old says it is and how its server log ends: whether the members could
// not reach each other or could not agree is the servers' story to tell.
func electionState(c *zkserver.Cluster, old int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var parts []string
	for i := range c.Size() {
		if i == old {
			continue
		}
		mode, err := c.Mode(ctx, i)
		if err != nil {
			mode = err.Error()
		}
		tail := strings.ReplaceAll(c.LogTail(i, 4), "\n", " | ")
		parts = append(parts, fmt.Sprintf("member %d: %s; log ends: %s", i, mode, tail))
	}
	return strings.Join(parts, "; ")
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

// partition cuts a follower of the ensemble from its peers (every
// server-to-server connection passes a proxy stress controls, see
// zkserver.WithPeerProxies) while its clients stay connected to it,
// preferably the follower a lingering holder is connected to. The follower
// goes on answering its clients until syncLimit ticks passed without the
// leader; the leader can expire their sessions before. The partition lasts
// until the holder saw its loss and at least the session timeout + 1s, then
// heals; every worker must acquire again.
func (fr *injector) partition(ev *Event) {
	c := fr.tg.Cluster
	ctx, cancel := healCtx()
	defer cancel()
	slot, proc := fr.pick()
	holding := fr.lingerOn(proc, 5*time.Second)
	leader, err := waitLeader(ctx, c.Leader, -1)
	if err != nil {
		ev.Failure = fmt.Sprintf("no leader: %v", err)
		if holding != nil {
			fr.f.Get(proc).Send(proto.Unlinger)
		}
		return
	}
	target, holding := fr.partitionTarget(ev, slot, proc, holding, leader)
	ev.Target = fmt.Sprintf("server %d (%s) from its peers; holder %s", target, c.Addr(target), fr.workerTarget(slot, proc))
	ev.affected = fr.allLive()
	ev.start = exclusion.Now()
	if err := c.PartitionMember(target); err != nil {
		ev.Failure = fmt.Sprintf("partition: %v", err)
		return
	}
	minEnd := time.Now().Add(fr.s.SessionTimeout + time.Second + time.Duration(fr.rng.IntN(1000))*time.Millisecond)
	var seen *proto.Message
	within := fr.s.SessionTimeout + 10*time.Second
	if holding != nil {
		seen = fr.waitEvent(proc, proto.Lingered, within)
	}
	fr.healAt(ctx, ev, target, minEnd)
	ev.healed = exclusion.Now()
	ev.ref = ev.healed
	ev.Note = fmt.Sprintf("cut %.2fs; leader was server %d", float64(ev.healed-ev.start)/1e9, leader)
	if holding != nil && ev.Failure == "" {
		fr.noteHolder(ev, proc, seen, within)
	}
}

// partitionTarget picks the follower to cut: the one the lingering holder
// is connected to, else a random follower. It names the variant, and lets
// a holder the cut does not touch go on (nil: no holder to watch).
func (fr *injector) partitionTarget(ev *Event, slot, proc int, holding *proto.Message, leader int) (int, *proto.Message) {
	on := -1 // the server the worker is connected to
	for i, p := range fr.tg.Proxies[slot] {
		if p.Stats().Active > 0 {
			on = i
		}
	}
	onFollower := on >= 0 && on != leader
	switch {
	case holding == nil:
		ev.Variant = "a follower (no hold within 5s)"
	case onFollower:
		ev.Variant = "the holder's follower"
	default:
		ev.Variant = "a follower (the holder is on the leader)"
		// The cut does not touch the holder: it keeps its hold.
		fr.f.Get(proc).Send(proto.Unlinger)
		holding = nil
	}
	if onFollower {
		return on, holding
	}
	var others []int
	for i := range fr.tg.Cluster.Size() {
		if i != leader {
			others = append(others, i)
		}
	}
	return others[fr.rng.IntN(len(others))], holding
}

// healAt heals the cut member target once minEnd has passed (or the
// injector aborts) and waits until it serves again.
func (fr *injector) healAt(ctx context.Context, ev *Event, target int, minEnd time.Time) {
	c := fr.tg.Cluster
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
}

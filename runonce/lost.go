package runonce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/runrec"
	"github.com/tierlock/tierlock/zklock"
)

// Ticks lost to a held lock. A process killed mid-run
// keeps the job's lock until its session expires, and a run longer than
// its period keeps it into the next ticks: those ticks are lost, no
// instance can run them. The attempt that found the lock held used to
// write first, and its write counted as the tick's run: the others skipped
// the tick as already run (their observers said already_ran), LastRun and
// tierlock ls named as the last runner an instance that only wrote, and
// nothing was said above Debug.
//
// Now an attempt that would write looks at the lock first (one
// getChildren), unless this instance made the last run and it is over:
// then a holder can only be a later run, whose write the attempt's read
// would show. A tick whose lock is held is written as a step back
// (runrec.Record.Yield: never a run), so the record keeps the last run
// that was made, and the attempt is lost (ErrLockHeld, observed as held)
// when its write would have run, already run otherwise. The look comes
// after the read and before the write conditional on the read's version:
// a holder that took the lock since the read wrote since (its write
// precedes its lock), so the write fails and the attempt starts again. A
// holder that takes the lock between the look and the attempt's own
// TryAcquire (a rare race: a remover, a slow claim) finds a write that
// counted: it is made not to count (unCount), the tick told as lost.
//
// Each instance tells an episode once, naming the holder, when it held it
// since (the server's time of its node) and, if its instance is gone, by
// when its session expires at the latest; and once when it is over: the
// lock free again and each named tick it lost decided by the record, run
// after (by the holder, late) or let go, with the ticks lost and run.

// looksAtLock reports whether an attempt that read prev must look at the
// job's lock before its write: unless this process made the last run (its
// hold's node known) and that run is over, and no RemoveJob holds the lock
// (prev.Removing).
func (c *claimer) looksAtLock(j *job, prev runrec.Last) bool {
	return prev.By != c.by || j.ownNode == "" || prev.Removing != ""
}

// holder returns the node that holds j's lock, "" when none does or it is
// this instance's own last hold, whose delete is on its way.
func (c *claimer) holder(ctx context.Context, j *job, p *probe) (string, error) {
	p.ask(&c.tell.heard, ctx)
	kids, err := call(ctx, c.s, func(conn *zk.Conn) ([]string, error) {
		kids, _, err := conn.Children(j.lock.Path())
		return kids, err
	})
	p.got(&c.tell.heard, err)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	first, low := "", int32(-1)
	for _, k := range kids {
		if _, seq, ok := zklock.Contender(k); ok && (low < 0 || seq < low) {
			first, low = k, seq
		}
	}
	if first == j.ownNode {
		return "", nil
	}
	return first, nil
}

// lostToHeld notes p's tick of j lost to its lock held by node ("": look
// again for it), by a RemoveJob of remover's if not "" (the run node's
// mark), tells the episode once when it begins, and returns the attempt's
// error. A holder after another is the same episode: this instance still
// cannot run the job, and the ticks it lost are still to be decided, the
// new holder perhaps running them late (a stopped instance woken, a run
// under cron.DelayIfStillRunning). Begun anew, the ticks lost to the
// holder before were forgotten, told neither lost nor run after: cronlock's
// fleet with ZooKeeper's clock 2 s behind told 20 ticks held that ran.
func (c *claimer) lostToHeld(ctx context.Context, j *job, p *probe, node, remover string) error {
	if node == "" {
		node, _ = c.holder(ctx, j, &probe{})
	}
	e := &j.held
	switch {
	case e.lost == 0:
		info := c.holderInfo(ctx, j, node)
		*e = heldEpisode{node: node, name: info.name, began: time.Now(), runs: -1}
		what := "tick lost: the job's lock is held by another run (of an earlier tick still going, or of an instance that died, until its session expires): this instance cannot run the job's ticks until the lock is free, and they are lost unless the holder runs them after (told once, and once the lock is free, with the ticks run after and those still undecided, whose end a line tells once the record shows each of them run or lets it go)"
		if remover != "" {
			what = "tick lost: the job's lock is held by a RemoveJob, removing the job while this instance schedules it (told once, and when it is free)"
		}
		c.tell.log.Warn(what, "job", j.key, "holder", info.name, "holder_node", node, "held_since", info.since, "if_gone_session_expires_by", info.expiry)
	case node != e.node:
		info := c.holderInfo(ctx, j, node)
		e.node, e.name = node, info.name
		c.tell.log.Debug("tick lost: the job's lock is held by another run now, in the same episode", "job", j.key, "holder", info.name, "holder_node", node, "held_since", info.since)
	}
	e.lost++
	if p.name != 0 {
		// The latest kept: a dead holder's episode loses a session's worth
		// of ticks, and the next instance to run takes the last of them.
		e.ticks = append(e.ticks, p.name)
		j.after.forget(p.name)
		if len(e.ticks) > maxHeldTicks {
			e.ticks = e.ticks[1:]
		}
	}
	// Every attempt names the instance (once, the first named
	// it, the others a lock node).
	return fmt.Errorf("%w: job %q: by %s (not run here: lost unless the holder runs it after, which this instance tells once the lock is free again)", ErrLockHeld, j.key, e.name)
}

// heldEnds ends j's episode once an attempt finds the lock free, or a run
// recorded after it began: told then, at once. The ticks it lost that the
// record shows run are taken back: the holder ran them after (a run longer
// than its period, under cron.DelayIfStillRunning, runs the next tick when
// it ends; a holder whose clock is behind, or woken from a stop, runs its
// ticks late), and they are told apart. A named tick not shown run may
// still be, until the record lets it go (below its floor, MaxRecent runs
// on): the end counts it undecided, and a line of its own tells, once
// every such tick is one or the other, how many ran after and how many
// were lost (heldticks.go). Told only when every tick was decided, the end
// came 18 s after the lock was free in a fleet of a tick every 2 s.
//
// Every read takes back the ticks it shows run, in the episode as at its
// end: the record names its last MaxRecent runs only, and a holder that
// runs the lost ticks late one after the other keeps the lock from this
// instance past them, so that at the end the first it ran have left the
// record and would be let go as lost (TestHeldEpisodeOutlastsTheRecord).
func (c *claimer) heldEnds(j *job, d decision) {
	e, last := &j.held, d.read.last
	w := ms(j.window)
	if d.read.stat != nil {
		c.heldDecided(j, last)
	}
	if e.node == "" && e.lost == 0 {
		return
	}
	if d.read.stat != nil {
		e.ranAfter += takeBack(&e.ticks, last, w)
	}
	if e.runs < 0 && d.decided() {
		e.runs = last.Runs
	}
	if !d.lock.free() && !(e.runs >= 0 && last.Runs > e.runs) {
		return
	}
	if d.read.stat != nil {
		// let go: no run of them can count now
		e.ticks = slices.DeleteFunc(e.ticks, func(tick int64) bool { return !last.Open(tick, w) })
	}
	c.heldTold(j)
}

// heldTold tells the end of j's episode, its named ticks not shown run
// and still open counted undecided, which j.after keeps; and forgets the
// episode.
func (c *claimer) heldTold(j *job) {
	e := &j.held
	open := len(e.ticks)
	c.tell.log.Warn("job's lock free again", "job", j.key, "ticks_lost", e.lost-e.ranAfter-open, "ticks_run_after", e.ranAfter,
		"ticks_undecided", open, "for", time.Since(e.began).Round(time.Millisecond))
	j.after.add(e.ticks)
	*e = heldEpisode{}
}

// holderDesc is what a lock node says of its holder.
type holderDesc struct {
	name   string // the instance's name (WithInstanceName), host:pid, or the node's
	since  string // the server's time of the node's create
	expiry string // by when its session expires, if its instance is gone
}

// holderInfo reads node, below j's lock, for the episode's line.
func (c *claimer) holderInfo(ctx context.Context, j *job, node string) holderDesc {
	desc := holderDesc{name: node, since: "unknown", expiry: "unknown"}
	if node == "" {
		desc.name = "unknown (gone)"
		return desc
	}
	data, stat, err := getNode(ctx, c.s, path.Join(j.lock.Path(), node))
	if err != nil {
		return desc
	}
	desc.since = time.UnixMilli(stat.Ctime).UTC().Format(time.RFC3339Nano)
	nd, l := parseLockNode(data)
	if nd.Host != "" {
		desc.name = fmt.Sprintf("%s:%d", nd.Host, nd.Pid)
	}
	if l.Instance != "" {
		desc.name = l.Instance
		if l.SessionTimeout > 0 {
			desc.expiry = time.Now().Add(msDuration(l.SessionTimeout)).UTC().Format(time.RFC3339Nano)
		}
	}
	return desc
}

// lockNode is the data of a job's lock node, as zklock writes it.
type lockNode struct {
	Host  string `json:"host"`
	Pid   int    `json:"pid"`
	Label string `json:"label"`
}

// parseLockNode returns what a lock node's data says, and its label: zero
// values for what it does not.
func parseLockNode(data []byte) (lockNode, lockLabel) {
	var nd lockNode
	var l lockLabel
	if json.Unmarshal(data, &nd) == nil {
		_ = json.Unmarshal([]byte(nd.Label), &l)
	}
	return nd, l
}

// instanceOf returns the instance named by a lock node's label, "" if
// none.
func instanceOf(data []byte) string {
	_, l := parseLockNode(data)
	return l.Instance
}

// lockLabel is the label of a job's lock node (zklock.WithLabel): the
// instance, and its session's timeout, for the other instances to tell a
// tick lost to it.
type lockLabel struct {
	Instance       string `json:"runonce"`
	SessionTimeout int64  `json:"session_timeout_ms,omitempty"`
}

// labelOf returns the lockLabel of the instance named by on s, encoded.
func labelOf(by string, s *zklock.Session) string {
	l := lockLabel{Instance: by}
	if t := s.LeaseStats().Timeout; t > 0 {
		l.SessionTimeout = t.Milliseconds() // the negotiated timeout
	}
	data, _ := json.Marshal(l) // strings and an int cannot fail
	return string(data)
}

// unCount makes d's write, which counted as a run its writer does not
// make (its lock taken meanwhile, its answer too late), not count: the
// record is written again with the state it read (runrec.Keep), unless a
// later run came since. So the last run recorded is one that was made.
func (c *claimer) unCount(ctx context.Context, j *job, d decision) {
	w := d.wrote
	if w.stat == nil {
		return
	}
	fired := w.rec.Fired(w.stat.Mtime)
	cur, stat := runrec.Derive(w.rec.Encode(), w.stat.Mtime, w.stat.Mzxid), w.stat
	for range 3 {
		if cur.At != fired || cur.By != c.by {
			return // a later write moved the last run
		}
		fix, prev := cur, d.read.last
		fix.At, fix.By, fix.Runs, fix.RunZxid = prev.At, prev.By, prev.Runs, prev.RunZxid
		keep := runrec.Keep(fix, w.rec.Window, stat.Mtime, stat.Mzxid)
		_, err := c.s.Txn(ctx, &zk.SetDataRequest{Path: j.runPath, Data: keep.Encode(), Version: stat.Version})
		if !errors.Is(err, zk.ErrBadVersion) {
			if err != nil {
				c.tell.log.Debug("a run not made still counts: its record could not be written again", "job", j.key, "err", err)
			}
			return
		}
		var data []byte
		if data, stat, err = getNode(ctx, c.s, j.runPath); err != nil {
			return
		}
		cur = runrec.Derive(data, stat.Mtime, stat.Mzxid)
	}
}

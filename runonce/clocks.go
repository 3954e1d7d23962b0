package runonce

import "github.com/tierlock/tierlock/internal/runrec"

// What the record read shows of the hosts' clocks. A write carries its
// writer's clock at its send (runrec's Last.Sent: its fire plus its
// delay) and gets the leader's clock (its mtime), which is at or after
// that send: the writer's clock less the server's was at least their
// difference. This host's own last write, answered after its mtime, says
// how far ahead of the server's its clock read at most (serverClock). Set
// against each other, in one leader's epoch, they show a writer's clock
// ahead of this one's by as little as a round trip; and, on any clocks,
// a time of the writer's later than this host's clock at the read that
// found it, which came after the write, shows it too. A run without a
// tick shows its fire, its host's clock when its timer fired, the same
// way. Clocks in step show neither.

// checkClocks tells, once at Info and once more as a warning from the
// job's window on, that another host's clock reads ahead of this one's,
// by what the record read (rd) for p's claim of j shows, naming the
// clocks: that host's, the server's, this host's at the read. A run
// without a tick whose fire is a window or more ahead is read as a run
// near its fire and near when it ran, not as a floor every tick must
// clear (runrec's readNames); the warning says so.
func (c *claimer) checkClocks(j *job, p *probe, rd reading) {
	last, t := rd.last, c.tell
	if t.toldAhead.Load() == 2 {
		return // told all it tells
	}
	now := p.at(rd.at)
	var sent, fire int64
	if last.Writer != c.by && last.Sent != 0 {
		sent = last.Sent - now
		if over, ok := c.clock.overAtMost(runrec.EpochOf(rd.stat.Mzxid)); ok {
			sent = max(sent, last.Sent-rd.stat.Mtime-over)
		}
	}
	if last.Unnamed() && last.By != c.by {
		fire = last.Tick - now
	}
	ahead := max(sent, fire)
	if ahead <= 0 {
		return
	}
	level, tell := int32(1), t.log.Info
	if ahead >= ms(p.window) {
		level, tell = 2, t.log.Warn
	}
	if told := t.toldAhead.Load(); told >= level || !t.toldAhead.CompareAndSwap(told, level) {
		return
	}
	what := "the hosts' clocks differ: the job's record holds its last writer's clock at its write's send ahead of this host's clock, by the ZooKeeper server's clock between them " +
		"(the write's mtime, and this host's last write's); each tick still runs once by its name, but keep the hosts' clocks in step (NTP): RemoveJob and the claims without a tick count on it"
	args := []any{"job", j.key, "by", last.Writer, "its_clock", tickString(last.Sent), "server_mtime", tickString(rd.stat.Mtime)}
	if fire > 0 {
		what = "the hosts' clocks differ: the job's last run, claimed without a tick (a RunNow, an instance not attached), fired by its host's clock ahead of this host's clock at the read that found it; " +
			"a tick within a window of that fire, or of when that run fired by this host's clock, already ran; the ticks after it run, by their names; keep the hosts' clocks in step (NTP)"
		args = []any{"job", j.key, "by", last.By, "its_fire", tickString(last.Tick), "server_dated", tickString(last.At)}
	}
	tell(what, append(args, "this_host_clock", tickString(now), "ahead_by_at_least", msDuration(ahead))...)
}

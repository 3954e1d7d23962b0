package runonce

import (
	"github.com/tierlock/tierlock/internal/hostclock"
)

// checkUnnamedAhead tells, once, what the record read (rd) for p's claim
// of j shows of the hosts' clocks when its last run had no tick: that
// run's fire, by its host's clock, after this host's clock at the read,
// which came after that run's write. Clocks in step cannot show it, by
// any amount: its host's clock reads ahead of this one's by that much at
// least. It names the three clocks: that host's fire, the ZooKeeper
// server's date of that run (its write's mtime less its delay), and this
// host's clock at the read. Told at Info under a window (w), as a
// warning from a window on, where the run is read as a run near its fire
// and near when it ran rather than as a floor every tick must clear
// (runrec's readNames).
func (t *reporter) checkUnnamedAhead(j *job, p *probe, rd reading) {
	last := rd.last
	now := rd.at.Add(hostclock.Offset()).UnixMilli()
	ahead := last.Tick - now
	if !last.Unnamed() || ahead <= 0 {
		return
	}
	level, tell, what := int32(1), t.log.Info, "by less than the job's window: the ticks up to its fire are let go, as that run may have been of one of them"
	if ahead >= ms(p.window) {
		level, tell, what = 2, t.log.Warn, "it is kept as a run near its fire and near when it ran (a tick within a window of either already ran), not as a floor every tick must clear"
	}
	if told := t.toldAhead.Load(); told >= level || !t.toldAhead.CompareAndSwap(told, level) {
		return
	}
	tell("the hosts' clocks differ: the job's last run, claimed without a tick (a RunNow, an instance not attached), fired by its host's clock ahead of this host's clock at the read that found it; "+what+"; keep the hosts' clocks in step (NTP)",
		"job", j.key, "by", last.By, "its_fire", tickString(last.Tick), "server_dated", tickString(last.At),
		"this_host_clock", tickString(now), "ahead_by_at_least", msDuration(ahead))
}

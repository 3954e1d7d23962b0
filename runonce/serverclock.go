package runonce

import (
	"sync"
	"time"
)

// serverClock bounds the server's clock from above, from this instance's
// last write: its mtime M was given after its send, so at any later local
// moment t the server's clock reads at most M + (t - send), in the same
// leader epoch and as long as this process's monotonic clock keeps pace
// with the leader's clock.
//
// An attempt uses it to skip without writing when its timer is certainly
// less than a window after the job's last run: then it could not run
// anyway, since a run needs the earliest its timer can have fired (at
// most the server's time at its timer, so at most this bound) a window
// after the last run (runrec.Record.Confirms). The later instances' attempts
// of a tick, two thirds of them in a fleet of three, cost a read instead
// of a read and a write (ZooKeeper transactions per tick). Not
// under WithSpread, whose choice needs every attempt written.
//
// The bound fails when this process's monotonic clock falls behind the
// leader's: a host suspend (the monotonic clock stops), the leader's clock
// stepped forward. Then it reads low, and a local skip would skip every
// tick for the lag's length, "already ran" (once, a 30-s lag
// lost 6 of 6 ticks). The read before the local skip checks it: the run
// node's mtime and the last run are server times at or before now, so
// either above the bound, or the wall clock gone further than the
// monotonic one since the note, is a clock jump; the note is dropped and
// the attempt writes, which notes the clock again. A skip the check
// cannot catch (a lag under a period) costs at most the one tick: the
// next attempt finds the last run a period older, and writes.
type serverClock struct {
	mu    sync.Mutex
	mtime int64     // the last write's mtime (ms)
	epoch int64     // its leader epoch
	sent  time.Time // its send, on the monotonic clock (and the wall clock)
	// over is this host's clock (as it names ticks) at the last write's
	// answer less its mtime (ms): the most this clock read ahead of the
	// leader's then (the write was ordered before its answer).
	over int64
}

// wallSlack is how far the wall clock may run ahead of the monotonic one
// since a note (an NTP slew) before that counts as a clock jump.
const wallSlack = 200 * time.Millisecond

// note records a write sent at sent that got mtime in epoch, answered at
// answered (ms, on the clock that names ticks).
func (c *serverClock) note(mtime, epoch int64, sent time.Time, answered int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sent.After(c.sent) {
		c.mtime, c.epoch, c.sent, c.over = mtime, epoch, sent, answered-mtime
	}
}

// overAtMost returns the most this host's clock read ahead of the
// server's at its last write (ms, negative when behind), if that write
// was in epoch.
func (c *serverClock) overAtMost(epoch int64) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.over, !c.sent.IsZero() && c.epoch == epoch
}

// clockRead is what the read before an attempt's write tells of the
// server's clock: the run node's epoch and mtime (ms, a server time before
// the read's answer), the last run (ms, on the clock of epoch), and when
// the answer came (local).
type clockRead struct {
	epoch, mtime, last int64
	answered           time.Time
}

// recent reports whether the last run is certainly less than w ms before
// the server's time at entry, with the most that time can be after it;
// jump reports a clock jump (see serverClock), behind by how much at
// least (ms), the note dropped.
func (c *serverClock) recent(rd clockRead, entry time.Time, w int64) (recent bool, since int64, jump int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sent.IsZero() || c.epoch != rd.epoch {
		return false, 0, 0
	}
	// The node's mtime is a server time before the read's answer: above
	// the bound then, the bound is wrong.
	behind := rd.mtime - (c.mtime + rd.answered.Sub(c.sent).Milliseconds() + 1)
	wall := rd.answered.Round(0).Sub(c.sent.Round(0)) - rd.answered.Sub(c.sent)
	if behind > 0 || wall > wallSlack {
		c.sent = time.Time{}
		return false, 0, max(behind, wall.Milliseconds(), 1)
	}
	since = c.mtime + entry.Sub(c.sent).Milliseconds() + 1 - rd.last // rounded up
	return since < w, since, 0
}

// bound returns the most the server's clock can read at local moment t
// (ms), by the last note in any epoch; false with no note.
func (c *serverClock) bound(t time.Time) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sent.IsZero() {
		return 0, false
	}
	return c.mtime + t.Sub(c.sent).Milliseconds() + 1, true
}

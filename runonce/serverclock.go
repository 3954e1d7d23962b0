package runonce

import (
	"sync"
	"time"
)

// serverClock bounds the server's clock from above, from this instance's
// last write: its mtime M was given after its send, so at any later local
// moment t the server's clock reads at most M + (t - send), in the same
// leader epoch and as long as that leader's clock does not step forward.
//
// An attempt uses it to skip without writing when its timer is certainly
// less than a window after the job's last run: then it could not run
// anyway, since a run needs the earliest its timer can have fired (at
// most the server's time at its timer, so at most this bound) a window
// after the last run (runrec.Record.Confirms). Skipping is always safe;
// this one costs no tick either, unless the leader's clock stepped forward
// since the write (a tick lost, as the rule's own bound allows). The later
// instances' attempts of a tick, two thirds of them in a fleet of three,
// cost a read instead of a read and a write (issue 38: ZooKeeper
// transactions per tick). Not under WithSpread, whose choice needs every
// attempt written.
type serverClock struct {
	mu    sync.Mutex
	mtime int64     // the last write's mtime (ms)
	epoch int64     // its leader epoch
	sent  time.Time // its send, on the monotonic clock
}

// note records a write sent at sent that got mtime in epoch.
func (c *serverClock) note(mtime, epoch int64, sent time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sent.After(c.sent) {
		c.mtime, c.epoch, c.sent = mtime, epoch, sent
	}
}

// recent reports whether the last run, at last (ms, on the clock of
// epoch), is certainly less than w ms before the server's time at entry,
// and the most that time can be after it.
func (c *serverClock) recent(epoch int64, entry time.Time, last, w int64) (bool, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sent.IsZero() || c.epoch != epoch {
		return false, 0
	}
	since := c.mtime + entry.Sub(c.sent).Milliseconds() + 1 - last // rounded up
	return since < w, since
}

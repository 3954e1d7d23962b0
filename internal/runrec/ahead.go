package runrec

// A run without a tick keeps its fire, its host's clock when its timer
// fired, as its name and as the floor of the ticks (names): a timer fires
// at its tick or after it, so that run was of a tick up to its fire, and
// the record cannot tell which. That reading holds when the writer's
// clock and the host's that fired agree. When the host that fired reads
// ahead of the writer's by more than a window, its fire is in the
// writer's future: no tick of the writer's up to it can have fired
// before that run, and as a floor it closed every tick of the named
// instances for as long as that host is ahead (a RunNow from a host 30 s
// ahead: 30 s of ticks run nowhere).
//
// Such a run is read as what it is, a run near a time: near its fire, by
// its host's clock (the tick that host names so ran), and near when it
// ran by the writer's clock, which the ZooKeeper server's clock dates
// (its write's mtime less its delay, the record's Last) and the write's
// own Stat translates (the writer's fire less its write's server date).
// The ticks up to that moment stay let go (it may have been a late fire
// of one of them); a tick after it by more than a window, not within a
// window of its fire, is decided by the names, as after a named run.
// Each of the comparisons is of one clock with itself, or of the
// server's with itself: the leader's clock dates both writes, so it
// must be one leader's (the same epoch, not stepped back), else the
// floor stands.

// aheadFire returns the fire of the last run, one without a tick (its
// fire its name and the floor, as names leaves it), when that fire is at
// least a window after the fire of r's writer: the host that fired it
// reads ahead of this writer's clock.
func (r Record) aheadFire() (int64, bool) {
	f := r.LastTick
	return f, r.Fire != 0 && f != 0 && f == r.Floor && f-r.Fire >= r.Window
}

// readNames returns the ticks and floor that decide r's write, which got
// mtime in epoch: the record's, or, after a run without a tick whose fire
// is ahead of this writer's (aheadFire), that fire kept as a tick run and
// the floor at when that run fired by this writer's clock (UnnamedAt),
// the ticks the list lets go aside.
func (r Record) readNames(mtime, epoch int64) ([]int64, int64) {
	f, ok := r.aheadFire()
	if !ok || (r.Epoch != 0 && r.Epoch != epoch) || mtime < r.Prev {
		return r.Ticks, r.Floor
	}
	ticks, floor := keep(f, r.Ticks, 0)
	return ticks, max(floor, r.UnnamedAt(mtime))
}

// UnnamedAt returns when the last run fired by the clock of r's writer,
// whose write got mtime: the server's date of that run (Last) plus this
// writer's fire less its own write's server date (Fired), the two
// writers' offsets from the server's clock set against each other.
func (r Record) UnnamedAt(mtime int64) int64 { return r.Last + r.Fire - r.Fired(mtime) }

// RanNear reports whether the write of r, a named tick's, that got mtime
// in epoch found its tick run by a run without a tick whose fire is ahead
// of its writer's (aheadFire): within a window of that fire, by the clock
// that fired it, or of when it ran, by this writer's.
func (r Record) RanNear(mtime, epoch int64) bool {
	if _, ok := r.aheadFire(); !ok || r.Tick == 0 {
		return false
	}
	ticks, _ := r.readNames(mtime, epoch)
	at := r.UnnamedAt(mtime)
	return ran(r.Tick, r.Window, ticks) || (r.Tick-at < r.Window && at-r.Tick < r.Window)
}

// Unnamed reports whether l's last run had no tick: its fire is its name
// and the floor (names).
func (l Last) Unnamed() bool { return l.Tick != 0 && l.Tick == l.Floor }

// MayOpen reports whether a write of tick (ms) by a writer of window w
// whose fire is fire (ms, by its host's clock) may run: the tick is open
// (Open), or the floor that closes it is the fire of the last run, one
// without a tick, at least a window in this writer's future, and the
// tick is open but for that floor: the write's Stat decides (Verdict).
func (l Last) MayOpen(tick, w, fire int64) bool {
	if l.Open(tick, w) {
		return true
	}
	r := Record{Window: w, Fire: fire, LastTick: l.Tick, Floor: l.Floor}
	f, ok := r.aheadFire()
	if !ok {
		return false
	}
	ticks, floor := keep(f, l.Ticks, 0)
	return open(tick, w, ticks, floor)
}

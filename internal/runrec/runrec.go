// Package runrec is the run node of a runonce job (<root>/<job>/run):
// the record each attempt writes while it holds the job's lock, and what a
// reader derives from that record and the node's Stat (the job's last run,
// by whom, how many runs). runonce's package doc states the rule and
// argues it; the code lives here so that the inspector (cmd/tierlock)
// reads a run node exactly as runonce does.
//
// A record is written before its writer knows the server time of its own
// write, so whether the write ran is not stored: it follows from the
// record and the Stat the write got (Verdict), and every reader derives
// the same (Derive).
package runrec

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"
)

// ServerSkew bounds how far the clocks of two ZooKeeper servers may
// differ. A write in another epoch than the record it read (a new ensemble
// leader ordered it) cannot compare the two leaders' clocks: it runs only
// when the last run is at least its window plus ServerSkew older, and
// otherwise rebases (see Verdict). Jobs of a period below that lose one
// tick per leader change; a new leader ahead by more than ServerSkew can
// repeat one.
const ServerSkew = 10 * time.Second

// Record is a run node's data. Times are server times in ms since the
// epoch; Last is on the clock of the leader that ordered the record's
// write (an invariant Derive keeps: a write that crosses a leader change
// never carries the old clock's time forward).
type Record struct {
	// Last is when the last run before this write started: its writer's
	// timer, as the server's clock dates it (see Verdict).
	Last int64 `json:"last"`
	// LastBy names the instance that made the last run.
	LastBy string `json:"last_by,omitempty"`
	// Runs counts the runs before this write.
	Runs int64 `json:"runs,omitempty"`
	// Window is the writer's window, in ms.
	Window int64 `json:"window_ms"`
	// Timeout is the largest lock timeout (runonce.WithLockTimeout) of the
	// writers, in ms, and MaxWindow the largest window: what a remover of
	// the job must wait for, whatever each instance's options (0: writers
	// of a version that did not record them).
	Timeout   int64 `json:"timeout_ms,omitempty"`
	MaxWindow int64 `json:"max_window_ms,omitempty"`
	// Tick is the scheduled time of the tick this write claims (ms, as its
	// scheduler names it: runonce's ClaimTick), 0 for a claim without one;
	// LastTick the last run's (0: it had none), Ticks the largest ticks
	// run, the largest first, at most MaxRecent, and Floor the largest
	// tick the list has let go (0: none): every tick run is in the list or
	// at most the floor. A tick is its
	// scheduled time: a spec's ticks are named alike on every instance,
	// whatever its clock reads, so a write that claims one is decided by
	// the names alone (see Verdict).
	Tick     int64   `json:"tick_ms,omitempty"`
	LastTick int64   `json:"last_tick_ms,omitempty"`
	Ticks    []int64 `json:"ticks_ms,omitempty"`
	Floor    int64   `json:"floor_ms,omitempty"`
	// Fire is the writer's host clock when its timer fired (its claim's
	// entry, ms, on the clock that names the ticks): the name a run
	// without a tick keeps in Ticks, so that a later named fire of its
	// tick does not run it again. A named claim's fire less its tick is
	// its lateness. 0: a writer of a version before it (see Derive).
	Fire int64 `json:"fire_ms,omitempty"`
	// Delay is the writer's own measure (monotonic, ms, rounded down) of
	// the time from its Lock's entry (the timer's firing) to the write's
	// send.
	Delay int64 `json:"delay_ms,omitempty"`
	// Prev and Epoch are the mtime and the leader epoch (Mzxid >> 32) of
	// the record the writer read; 0 when it read none.
	Prev  int64 `json:"prev_mtime,omitempty"`
	Epoch int64 `json:"prev_epoch,omitempty"`
	// By names the writer, host:pid.
	By string `json:"by,omitempty"`
	// Spreading runs across the fleet (runonce.WithSpread): Recent
	// names the instances that made the last runs, the latest first, at
	// most MaxRecent; Since the instances that wrote after the last run;
	// Yield says that the writer steps back (skips) should its write be
	// a run.
	Recent []string `json:"recent,omitempty"`
	Since  []string `json:"since,omitempty"`
	Yield  bool     `json:"yield,omitempty"`
	// Removing names the instance removing the job (runonce's RemoveJob),
	// on the records it writes while it waits: an attempt that reads it
	// writes, so that the remover sees the job still scheduled.
	Removing string `json:"removing,omitempty"`
	// RunZxid is the zxid of the write that recorded the last run before
	// this one, carried on by every write (Keep, an attempt's write) from
	// the record read; 0: unknown (none yet, or a writer of a version
	// before it). A write that is itself a run is its own (Derive): the
	// job's lock is a run's when it was taken before that write.
	RunZxid int64 `json:"run_zxid,omitempty"`
}

// MaxRecent bounds Record.Recent.
const MaxRecent = 8

// Encode returns r as a run node's data.
func (r Record) Encode() []byte {
	b, _ := json.Marshal(r) // ints, strings and a slice of strings cannot fail
	return b
}

// Decode parses a run node's data; false when it is not a record (an
// operator's write, say).
func Decode(data []byte) (Record, bool) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil || r.Window <= 0 {
		return Record{}, false
	}
	return r, true
}

// Verdict is what a write decided.
type Verdict int

// The verdicts.
const (
	// Skip: a run started less than the window ago.
	Skip Verdict = iota
	// Run: the writer runs; the run is dated by its timer (Fired).
	Run
	// Rebase: the writer skips and dates the last run at its own write,
	// on its leader's clock, because it cannot compare that clock with the
	// one that dated the last run: a leader change, or the leader's clock
	// stepped back.
	Rebase
)

// EpochOf returns the leader epoch of a zxid.
func EpochOf(zxid int64) int64 { return zxid >> 32 }

// Fired is the latest server time the writer's timer can have fired at:
// the write was ordered after its send, Delay after the timer. A write
// that counts as a run dates it so.
func (r Record) Fired(mtime int64) int64 { return mtime - r.Delay }

// Verdict decides the write of r that got mtime in epoch (its Stat's
// Mtime, EpochOf(Mzxid)): whether it counts as a run, by its timer dated
// as late as it can have fired (Fired). Every reader derives the same. The
// writer itself runs only if Confirms says so too.
//
// A write without a tick is decided by the server's clock (timeVerdict),
// one that claims a tick by the names (tickVerdict), unless the last run
// has no name (nameless): a run of a writer that drops the names (a
// version before them) or of one that did not keep its own (a version
// before Fire). Then both decide: the server's clock, the timer dated at
// its tick (its fire less its lateness), and the names kept; and a run
// lets every tick before its own go (Derive), since the record cannot
// tell which one the nameless run was.
func (r Record) Verdict(mtime, epoch int64) Verdict {
	switch {
	case r.Tick == 0:
		return r.timeVerdict(mtime, epoch, r.Delay)
	case !r.nameless():
		return r.tickVerdict(mtime, epoch)
	}
	v := r.timeVerdict(mtime, epoch, r.Delay+r.late())
	if v == Run && !open(r.Tick, r.Window, r.Ticks, r.Floor) {
		return Skip
	}
	return v
}

// nameless reports whether the last run before r's write has no name: a
// run is recorded (Last), and its tick is not (LastTick).
func (r Record) nameless() bool { return r.LastTick == 0 && r.Last != 0 }

// late returns how long after its tick a named writer's timer fired, by
// its host's clock (ms, rounded up; 0 when it fired early or is unknown).
func (r Record) late() int64 {
	if r.Tick == 0 || r.Fire < r.Tick {
		return 0
	}
	return r.Fire - r.Tick + 1
}

// tickVerdict decides a write that claims a named tick after a named run:
// it runs when its tick is open (Open), by the names alone, whatever the
// clocks and latencies (an attempt of a tick run never runs). A skip
// across a leader change or a clock step back rebases the server time
// (the last run's date), not the names.
func (r Record) tickVerdict(mtime, epoch int64) Verdict {
	ticks, floor := r.readNames(mtime, epoch)
	switch {
	case open(r.Tick, r.Window, ticks, floor) && !r.Yield:
		return Run
	case (r.Epoch != 0 && r.Epoch != epoch) || mtime < r.Prev:
		return Rebase
	}
	return Skip
}

// timeVerdict decides a write by the server's clock: its timer, dated
// delay before its write's mtime, a window after the last run's.
func (r Record) timeVerdict(mtime, epoch, delay int64) Verdict {
	elapsed := mtime - delay - r.Last
	switch {
	case r.Epoch != 0 && r.Epoch != epoch:
		if elapsed >= r.Window+ServerSkew.Milliseconds() && !r.Yield {
			return Run
		}
		return Rebase
	case mtime < r.Prev:
		// One leader's clock went back between two writes it ordered.
		return Rebase
	case elapsed >= r.Window && !r.Yield:
		return Run
	default:
		// Negative included: a write whose timer fired before the last
		// run's, whose lock came later (the decisions are serialized, the
		// timers are not).
		return Skip
	}
}

// Confirms reports whether the writer of r, whose write's answer came
// answered after its Lock's entry, runs: its write counts as a run
// (Verdict), and would with its timer dated as early as it can have fired
// (the write was ordered before its answer). The last run is dated as late
// as its timer can have fired, so a run is confirmed only if its timer
// fired at least a window after the last run's, whatever the latencies: a
// later attempt of the same tick is never confirmed. A write that counts
// as a run but is not confirmed is a tick lost, never one run twice.
func (r Record) Confirms(mtime, epoch int64, answered time.Duration) bool {
	if r.Tick != 0 && !r.nameless() {
		return r.Verdict(mtime, epoch) == Run // the names decide: no latency counts
	}
	early := r
	early.Delay = (answered + time.Millisecond - 1).Milliseconds() // rounded up
	return r.Verdict(mtime, epoch) == Run && early.Verdict(mtime, epoch) == Run
}

// Keep is the record of a write that leaves the job's state as prev (the
// state of the node read, of mtime and mzxid) and is no instance's
// attempt: it never counts as a run, and names no writer, so that it
// leaves Recent and Since as they are. Its mtime tells its writer the
// server's time (runonce's RemoveJob). window is the writer's.
func Keep(prev Last, window, mtime, mzxid int64) Record {
	return Record{Last: prev.At, LastBy: prev.By, Runs: prev.Runs, Window: window, Timeout: prev.Timeout, MaxWindow: max(prev.MaxWindow, window),
		LastTick: prev.Tick, Ticks: prev.Ticks, Floor: prev.Floor, Prev: mtime, Epoch: EpochOf(mzxid), Recent: prev.Recent, Since: prev.Since, Yield: true,
		RunZxid: prev.RunZxid}
}

// Last is a job's state after a write: its last run and the count.
type Last struct {
	At        int64  // when the last run started (server ms); 0 if none
	By        string // who made it
	Runs      int64  // runs recorded
	Window    int64  // the window of the write's writer, ms (0: unreadable)
	Timeout   int64  // the largest lock timeout written, ms (0: not recorded)
	MaxWindow int64  // the largest window written, ms
	// Tick is the scheduled time of the last run (ms), 0 when it had none;
	// Ticks the largest ticks run, the largest first, and Floor the
	// largest tick let go of the list.
	Tick   int64
	Ticks  []int64
	Floor  int64
	Writer string // who wrote last
	// Sent is the last writer's clock when it sent its write (its Fire
	// plus its Delay, ms; 0: not an attempt's, or unknown): a reader whose
	// clock at the read that found it reads earlier has a clock behind
	// the writer's by the difference at least.
	Sent int64
	// Old says that the last writer keeps no names (a version before
	// Fire, or before ticks): its runs leave none (Verdict).
	Old bool
	Ran bool // the write was itself a run
	// RunZxid is the zxid of the write that recorded the last run (0:
	// unknown): a lock taken before it is that run's or an earlier one's,
	// one taken after it a claim under way, whatever was written since.
	RunZxid int64
	// Removing names the instance removing the job, if the write was its
	// (see Record.Removing).
	Removing string
	// Recent and Since, for spreading: see Record.
	Recent, Since []string
}

// Derive returns the state a run node's data and Stat (mtime, Mzxid) leave.
// Data that is not a record (an operator's write) counts as a run at its
// mtime: it can cost a tick, never repeat one.
func Derive(data []byte, mtime, mzxid int64) Last {
	r, ok := Decode(data)
	if !ok {
		return Last{At: mtime, Runs: 0}
	}
	l := Last{At: r.Last, By: r.LastBy, Runs: r.Runs, Window: r.Window, Timeout: r.Timeout, MaxWindow: max(r.MaxWindow, r.Window),
		Tick: r.LastTick, Ticks: r.Ticks, Floor: r.Floor, Writer: r.By, Old: r.By != "" && r.Fire == 0, Removing: r.Removing, RunZxid: r.RunZxid}
	if r.Fire != 0 {
		l.Sent = r.Fire + r.Delay
	}
	epoch := EpochOf(mzxid)
	v := r.Verdict(mtime, epoch)
	l.Recent, l.Since = r.Spread(v == Run, r.SteppedBack(mtime, epoch))
	switch v {
	case Run:
		l.At, l.By, l.Runs, l.Ran, l.RunZxid = r.Fired(mtime), r.By, r.Runs+1, true, mzxid
		l.Tick, l.Ticks, l.Floor = r.names(mtime, epoch)
	case Rebase:
		l.At = mtime
	}
	return l
}

// names returns the names a run of r, its write's mtime in epoch,
// leaves: its tick, the ticks run and the floor, from those it read
// (readNames: a run without a tick whose fire is ahead of this writer's
// is kept as a run near that fire, ahead.go). A run without a tick (a
// claim that does not know it) lets every tick up to its fire go: a timer
// fires at its tick or after it, so its run was of one of those, and the
// record cannot tell which. A named run after a nameless one lets every
// tick a window before its own go: the nameless run was of one of those
// (Verdict).
func (r Record) names(mtime, epoch int64) (tick int64, ticks []int64, floor int64) {
	ticks, floor = r.readNames(mtime, epoch)
	switch {
	case r.Tick == 0 && r.Fire != 0:
		return r.Fire, ticks, max(floor, r.Fire)
	case r.Tick == 0:
		return 0, r.Ticks, r.Floor // a writer that keeps no names: the next named run lets them go
	}
	ticks, floor = keep(r.Tick, ticks, floor)
	if r.nameless() {
		floor = max(floor, r.Tick-r.Window)
	}
	return r.Tick, ticks, floor
}

// SteppedBack reports whether the write of r that got mtime in epoch
// stepped back from a tick it would have run (Yield): without Yield, it
// would have been a run.
func (r Record) SteppedBack(mtime, epoch int64) bool {
	if !r.Yield {
		return false
	}
	eager := r
	eager.Yield = false
	return eager.Verdict(mtime, epoch) == Run
}

// RanTick reports whether the ticks of l show tick (ms) run: a run whose
// tick is within w of it (the same tick, named alike by every instance,
// or within the window by which instances whose ticks differ count one).
func (l Last) RanTick(tick, w int64) bool { return ran(tick, w, l.Ticks) }

// Open reports whether a run of tick (ms) by a writer of window w would
// be one (Verdict): no tick within w of it ran, and it is w above the
// floor (the runs the list has let go are not known).
func (l Last) Open(tick, w int64) bool { return open(tick, w, l.Ticks, l.Floor) }

// Latest returns the latest tick run, 0 if none is kept.
func (l Last) Latest() int64 {
	if len(l.Ticks) == 0 {
		return 0
	}
	return l.Ticks[0]
}

// keep returns ticks (the largest first) with tick, and the floor: the
// smallest let go when there are more than MaxRecent.
func keep(tick int64, ticks []int64, floor int64) ([]int64, int64) {
	i, _ := slices.BinarySearchFunc(ticks, tick, func(t, target int64) int { return cmp.Compare(target, t) })
	ticks = slices.Insert(slices.Clone(ticks), i, tick)
	if len(ticks) > MaxRecent {
		floor = max(floor, ticks[MaxRecent])
		ticks = ticks[:MaxRecent]
	}
	return ticks, floor
}

// ran reports whether a tick within w of tick is in ticks.
func ran(tick, w int64, ticks []int64) bool {
	for _, t := range ticks {
		if tick-t < w && t-tick < w {
			return true
		}
	}
	return false
}

// open reports whether tick is a tick to run, by the names: not run
// (ran), and w above floor. A tick below the latest run's runs too: a
// tick a fleet's instance passed over (one whose clock is ahead of the
// others' leads them, and its first tick after a stop leaps over the ones
// between), when another instance comes to it.
func open(tick, w int64, ticks []int64, floor int64) bool {
	return !ran(tick, w, ticks) && (floor == 0 || tick-floor >= w)
}

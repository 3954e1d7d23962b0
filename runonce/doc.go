// Package runonce runs each tick of a job once across a fleet of
// processes that all schedule it, on tierlock's ZooKeeper locks: when a
// job's timer fires on an instance, Claim (or Do) decides whether this
// instance runs that tick, and says why not when it does not. It knows no
// scheduler: gocronlock (gocron v2) and cronlock (robfig/cron v3), modules
// of their own, are thin adapters over it, and a program with its own
// timers can call it directly.
//
// # Why a lock is not enough
//
// A scheduler's timers fire on every instance, hundreds of milliseconds
// apart, and nothing names the tick they fire for. A lock held only while
// the job runs stops runs from overlapping, not a tick from running twice:
// when the instances' timers are 150 ms apart and the job takes 10 ms,
// each instance finds the lock free in turn and runs the same tick again
// (gocron issue #841; a Redis lock in a robfig/cron JobWrapper alike). Once
// per tick needs a rule tied to the tick, judged by one clock: the
// ZooKeeper server's, never the instances'.
//
// # The rule
//
// Each job (a key) has, below the Runner's root, a persistent run node
// (root/<job>/run) and a zklock.Lock (root/<job>/lock). Claim(ctx, job):
//
//  1. reads the run node, and derives L, the server time of the job's last
//     run (dated as late as its timer can have fired: see 3);
//  2. writes the run node (data: L, this instance's window W, and d, the
//     time from Claim's entry to this write's send on the instance's
//     monotonic clock), conditional on the version it read; the reply's
//     mtime M is the server's clock when it ordered the write, somewhere
//     between the send and the answer, e after Claim's entry;
//  3. the write counts as a run when (M - d) - L >= W: M - d is the latest
//     server time this instance's timer can have fired at. Every later
//     reader derives the same from the data and the mtime (internal/runrec),
//     so whether a write ran is not stored;
//  4. this instance runs when the write counts as a run and (M - e) - L >=
//     W too: M - e is the earliest its timer can have fired at. A write that
//     counts as a run but is not confirmed so (its answer came too late,
//     ErrSlowWrite) is a tick lost;
//  5. to run, it takes the job's lock without waiting
//     (zklock.Lock.TryAcquire) and holds it for the run, until
//     Claim.Release, so that runs do not overlap. Otherwise it skips
//     (ErrAlreadyRan).
//
// A tick whose lock is held (a run of an earlier tick still going, or a
// dead instance's hold until its session expires) is lost: an attempt that
// would write looks at the lock first, unless this process made the last
// run, writes a step back (never a run) when it is held, and returns
// ErrLockHeld when its write would have run, so that the record keeps the
// last run that was made and the other instances do not take the lost
// tick for a run (lost.go). Each instance tells an episode of lost ticks
// once, naming the holder, and once when the lock is free again.
//
// An attempt costs one read and one write, and a run the lock's create and
// delete besides (and a read of the lock's children when another instance
// made the last run). This rule, Claim's, compares the server's clock with
// the server's clock only (the mtimes; the instance's own measures are
// durations on its monotonic clock).
//
// Two instances cannot both run one tick. The decisions form one chain:
// each write is refused if anyone wrote the node since its read (the
// version), and a refused write is read again and decided afresh, so each
// decision stands on the server's record of the one before. A run A counts
// with its timer dated at its latest, L >= the server's time at A's timer;
// a later attempt B runs only if the earliest its timer can have fired is
// W after that. So B's timer fired at least W after A's, whatever the
// latencies in between (a slow Claim, a busy server, a pause between the
// measure and the send): B is not an attempt of A's tick. An attempt whose
// timer fired before the last run's but whose write came later finds its
// time before L, and skips.
//
// # The window
//
// W (WithWindow, WithJobWindow; DefaultWindow, 500 ms) is one value for
// the whole fleet, per job. Let S be the spread of one tick across the
// fleet: the largest gap between the first and the last instance's timer
// for the same tick, and r the round trip of the run node's write (from
// its send to its answer). Each tick runs once when
//
//	S < W <= P - S - 2r
//
// for a job of period P. Safety needs only S < W (see above); the round
// trips cost slack: the first attempt C of the next tick finds at least
// P - S - r_A - r_C between the latest A's timer can have fired and the
// earliest C's can, and runs if that is W. The lock's and the read's
// latency count nowhere. The default suits ticks of one second or more
// whose instances fire within about 300 ms of each other, with writes
// answered within 100 ms: cron specs on clocks kept by NTP, or interval
// jobs started on a common boundary. Interval jobs started at each
// instance's own start time have a spread up to the period: then no
// window gives once per tick, and W close to P gives at most one run per
// W.
//
// # Clocks
//
// The server time is the ensemble leader's wall clock when it ordered the
// write. Each write also stores the mtime and the leader epoch (Mzxid's
// high 32 bits) of the record it read, and a write that cannot compare the
// clocks rebases: it skips, and dates the last run at its own mtime, on its
// own leader's clock, for the attempts after it.
//
//   - A write in another epoch than the record it read (a new ensemble
//     leader ordered it) runs only when the last run is at least W plus
//     runrec.ServerSkew (10 s) older, and otherwise rebases. A new leader
//     whose clock is behind or ahead of the old one's by up to 10 s costs
//     a job at most one tick, and only a job of a period under about
//     10 s + W; it never repeats one.
//   - A write whose mtime is below the mtime it read (the leader's clock
//     went back between the two writes) rebases: a clock stepped back by
//     any amount, hours included, costs at most one tick and repeats none.
//     A step back shorter than the gap between two writes is not seen, and
//     only shortens the time since the last run: it can cost the ticks
//     within the step of the last run, never repeat one.
//   - What remains: a leader whose clock steps forward by X between a
//     tick's run and a later attempt of the same tick repeats that tick when
//     X >= W - S; a new leader ahead of the old one by more than 10 s can
//     repeat one. Named ticks (ClaimTick, below) are decided by their
//     names, whatever the server's clock.
//
// What the rule trades: a run whose outcome is unknown (its write timed
// out, its hold was lost after the write) counts as run, so a tick can be
// lost but is never run twice. A run is told to the observer when it ends
// (Claim.Release), as failed when it panicked (Do, Claim.Fail).
//
// # Ticks a scheduler knows
//
// A scheduler that tells a fire's scheduled tick claims it with ClaimTick
// (cronlock and gocronlock do, with the scheduler attached). The tick is
// its name: a spec's boundary, named alike on every instance whatever its
// clock reads. The run node keeps the names of the job's runs (the
// largest eight, and the largest let go), and a named tick after a named
// run is decided by the names alone (internal/runrec): it runs when no
// run's tick is within the window of it, and an attempt of a tick run
// never runs, whatever the hosts' clocks, the server's and the latencies
// (a tick that an instance whose clock is ahead passed over runs when
// another comes to it). A run without a tick (a claim that does not know
// it: RunNow, a scheduler not attached) keeps its fire, on its host's
// clock, as the floor: a timer fires at its tick or after, so that run
// was of a tick at or before its fire, and none of those runs again; a
// named run after a run of an instance of a version that keeps no names
// lets every tick a window before its own go. Its attempt skips on the read alone when its tick
// ran, and takes the job's lock before its write when it would run (a claim cut
// between the two leaves its lock held: the others tell its tick lost,
// not run; one under way, its lock taken after the run node's last write,
// they wait for, by the holder's lock timeout within their own, and
// decide on its write, or tell the tick unknown when their own runs out;
// a first run, too, takes the lock before it makes the run node).
// Each comparison is of one clock (stale.go): a fire's lateness
// is this host's clock at the claim less the tick; ticks are compared
// with ticks. A tick fired more than its window late is a replay of a
// tick a stopped process slept through, or one its scheduler delayed:
// skipped as stale (ErrStale) when a run of it is recorded, run when no
// instance ran it, and unknown (ErrTickUnknown) when the record can
// neither show nor rule out a run of it, told so; a late tick of a job with no run node is not run (it may be
// one of a job removed since). A job whose ticks are each instance's own
// (robfig/cron's @every, from each instance's start) claims with
// ClaimEvery: its window is its period, so that it runs once per period
// whatever the phases.
//
// # Bounds
//
// Claim never takes longer than the lock timeout (WithLockTimeout,
// DefaultLockTimeout): it works under its own deadline, whatever
// ZooKeeper does. Release does not wait: the lock's release goes out in
// the background and is retried until it lands, so a shutdown's cancelled
// context is no matter.
//
// # What the Runner tells
//
// Where the run node shows the fleet outside the envelope, the Runner says
// so once per job (envelope.go), counting only the ticks this instance saw
// (an unbroken run of its attempts one period apart: a stop or a stall
// starts the count afresh): windows that differ; a job that runs more
// than once per tick, with the spread and the period this instance
// measured and the window that would do, or that none can
// (WithBoundaryHint adds the scheduler's way to a common boundary); first
// attempts of a tick that skip; a clock jump (serverclock.go). Ticks lost
// to a held lock are told once per episode and job (lost.go), and stale
// ticks skipped (ClaimTick, stale.go) once per episode. An outage of
// ZooKeeper is logged in two lines, when a Claim first fails to reach it
// (ZooKeeper silent for the lock timeout while this process was not too
// slow to hear it, or the session not connected: a Claim that timed out
// while ZooKeeper answered is none) and when ZooKeeper has answered again
// for 5 s (outage.go). A fleet too busy for its jobs is told so, not as a
// misconfigured fleet nor as an outage (overload.go): a run its write
// confirmed too late (ErrSlowWrite), a Claim past its timeout while
// ZooKeeper answered, and, while this instance measures itself late, the
// envelope's symptoms are overload, said in a line when it begins (the
// Claim's latency and the process's scheduling latency, 99th percentiles,
// and what to change), once per job, and in a line when it ends
// (lateness.go measures). The end of an outage, of an episode of stale
// ticks and of one of lost ticks names each job with the ticks it cost. A
// named tick that a later one ran before it fired, on time here, says the
// hosts' clocks differ (once), and ticks closer than the window say so. WithObserver hears every Claim
// (lockmetrics.Collector.ObserveJob exports them); LastRun, and tierlock
// ls on the root, tell each job's last run and who made it; RemoveJob
// deletes a retired job's nodes, once no attempt of a tick it ran can
// still decide (ErrJobActive while an instance schedules it), whatever
// each instance's options: the run node keeps the largest window and
// lock timeout written, each instance writing its own at its first
// attempt of the job, and a claim older than its lock timeout is refused.
//
// # Spreading
//
// The instance whose timer fires first makes every run. WithSpread makes
// an instance step back (ErrYielded) when it made one of the job's last k
// runs, k being how many other instances the run node shows alive: the
// last run's runner, and the instances that wrote since that run or since
// the last step back, whichever came later. Of k+1 instances one at least
// made none of the last k runs and never steps back. Stepping back is a
// skip, so it cannot make a tick run twice. A step back starts the list
// afresh: the instances it leaves the tick to count as alive again only by
// writing after it. So an instance that leaves costs a job at most the one
// tick left to it; the next tick's attempts no longer step back for it
// (runrec.TestSpreadFleetChurn, TestSpreadAfterALeave and
// TestFleetSpreadLeave). The run node's format is the one of gocronlock's
// versions before this package: instances of those, which keep a writer in
// the list until the next run, can share a fleet with these
// (runrec.TestSpreadMixedFleet, gocronlock.TestFleetMixed).
//
// # A run's context
//
// Claim.Context, and RunContext for a job a scheduler runs without its
// Claim, is cancelled also when the run's lock is lost and when
// Runner.Close releases it, so that a job can stop working under a lock it
// no longer holds. The run's Release then returns an error wrapping
// zklock.ErrLockLost, or one matching ErrClosed (no warning: the program
// closed the Runner itself).
package runonce

// Package runonce runs each tick of a job once across a fleet of
// processes that all schedule it, on tierlock's ZooKeeper locks: when a
// job's timer fires on an instance, Claim (or Do) decides whether this
// instance runs that tick, and says why not when it does not. It knows no
// scheduler: gocronlock (gocron v2) and cronlock (robfig/cron v3) are thin
// adapters over it. A lock held while a job runs keeps runs from
// overlapping, not a tick from running twice: the rule is tied to the
// tick, and each of its comparisons is of one clock with itself.
//
// # The rule
//
// Each job has, below the Runner's root, a persistent run node
// (root/<job>/run) and a zklock.Lock (root/<job>/lock). A claim reads the
// run node, decides, and writes it conditional on the version it read; a
// refused write is read again and decided afresh, so the decisions form
// one chain, each on the server's record of the one before. To run, the
// claim holds the job's lock, taken without waiting, until Claim.Release.
//
//   - A named tick (ClaimTick: the scheduler tells the fire's scheduled
//     time, named alike on every instance) runs when no run's tick in the
//     record is within the window W of it, whatever the clocks.
//   - A claim without a tick (Claim) is dated by the ZooKeeper server's
//     clock: the write's mtime less the claim's own delays. It runs when
//     the earliest its timer can have fired is W after the last run.
//   - ClaimEvery, for ticks of each instance's own phase, has its period
//     as W: once per period across the fleet.
//   - A tick whose lock is held (a run still going, a dead instance's hold)
//     is lost (ErrLockHeld): its write is a step back, never a run.
//   - A named tick fired more than W late (a replay, or a tick its
//     scheduler delayed) is skipped when the record shows it run
//     (ErrStale), run when it shows no instance ran it, and otherwise
//     unknown (ErrTickUnknown).
//   - A run whose outcome is unknown counts as run: a tick can be lost,
//     never run twice.
//
// # The window
//
// W (WithWindow, WithJobWindow; DefaultWindow, 500 ms) is one value for
// the whole fleet, per job. With S the spread of one tick's timers across
// the fleet, P the job's period and r a write's round trip, a claim
// without a tick runs each tick once when S < W <= P - S - 2r; a named
// tick needs only W < P. A run whose write is answered too late to rule
// out an earlier run of its tick is lost (ErrSlowWrite).
//
// # Bounds, and what it tells
//
// Claim returns within the lock timeout (WithLockTimeout); Release does
// not wait for ZooKeeper. The run's context (Claim.Context, RunContext) is
// cancelled when the run's lock is lost or the Runner closed. What the
// decisions do not say is told once per episode, not per tick: an outage
// of ZooKeeper, a stall of this process, an overload, a fleet outside the
// envelope (windows that differ, ticks run twice, hosts' clocks apart),
// ticks lost to a held lock, stale or unknown. WithObserver hears every
// Claim; LastRun and tierlock ls tell each job's last run; WithSpread
// spreads the runs over the fleet; RemoveJob deletes a retired job's
// nodes once no attempt can still be of a tick it ran.
//
// docs/cron.md, "runonce's rule, argued", argues each of these.
package runonce

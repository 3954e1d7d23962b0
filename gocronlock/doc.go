// Package gocronlock runs gocron v2 jobs once per tick across a fleet of
// processes, on tierlock's ZooKeeper locks (package runonce): a Locker for
// gocron.WithDistributedLocker (every instance schedules every job, one
// runs each tick) and an Elector for gocron.WithDistributedElector (one
// leader runs everything).
//
// It is a module of its own, so that tierlock does not depend on gocron.
// It speaks runonce's vocabulary, as cronlock does: a Locker's options
// are runonce.Option values (runonce.WithWindow, ...), its errors,
// outcomes and records runonce's (runonce.ErrLockHeld, runonce.Event,
// runonce.Run); the same names gocronlock used to re-export stay as
// deprecated aliases of them.
//
// # Why a lock is not enough
//
// gocron calls Locker.Lock once per tick on every instance, when that
// instance's timer fires, with the job's name as key and nothing that
// names the tick. A lock held only while the job runs stops runs from
// overlapping, not a tick from running twice: when the instances' timers
// are 150 ms apart and the job takes 10 ms, each instance finds the lock
// free in turn and runs the same tick again (gocron issue #841). Once per
// tick needs a rule tied to the tick, judged by one clock: the ZooKeeper
// server's, never the instances'.
//
// # The rule
//
// The Locker is a thin adapter over package runonce, whose doc states the
// rule and argues it: Lock(ctx, job) is runonce's Claim of the job's tick
// (the job's name is the key), the gocron.Lock it returns is the Claim,
// and its Unlock the Claim's Release. Each job has, below the Locker's
// root, a persistent run node (root/<job>/run) and a zklock.Lock
// (root/<job>/lock); Lock reads the run node and writes it back,
// conditional on the version it read, and the write's mtime, the server's
// clock, decides. The window W (runonce.WithWindow, runonce.WithJobWindow;
// runonce.DefaultWindow, 500 ms) is one value for the whole fleet, per job: with S the spread of
// one tick across the fleet, r the write's round trip and P the job's
// period, each tick runs once when
//
//	S < W <= P - S - 2r
//
// The default suits ticks of one second or more whose instances fire
// within about 300 ms of each other: cron jobs on clocks kept by NTP, or
// duration jobs started on a common boundary (gocron.WithStartAt). Duration
// jobs started at each instance's own start time have a spread up to the
// period: then no window gives once per tick.
//
// gocron passes Lock no tick, but while Lock runs the job's scheduled
// times hold the run it decides: Locker.Attach (or NewScheduler, which
// makes the scheduler with the Locker and attaches it) lets the Locker
// read them and claim the tick with runonce.ClaimTick, by its name: ticks
// are compared with ticks, whatever the hosts' and ZooKeeper's clocks, so
// that each tick runs once; a tick gocron fires late after a stop (a
// SIGSTOP, a suspend), which the fleet ran on time, is skipped as stale
// and said so rather than run again. gocron drops a job's past times when
// a run of it completes or a Lock of it is refused, so a fire that waited
// (under gocron.WithLimitConcurrentJobs with gocron.LimitModeWait, or a
// singleton job's wait mode, behind busy slots) or whose previous run's
// completion gocron handled late (a loaded instance) can find its time
// gone: the Locker names it by the times its earlier Locks saw come, one
// Lock per time. A Lock of no time that came since the job's last Lock is
// a RunNow, claimed by its own time and told at Info (a run near that
// time: from an instance whose clock is ahead of the others', the ticks
// after it still run, by their names, and the clocks are told); one that may be a
// queued fire whose time another Lock took (a RunNow among queued fires)
// is not run (runonce.ErrTickUnknown), told at Warn and observed. Every
// gocron mode keeps each tick once; with gocron.LimitModeReschedule a
// fire gocron skipped leaves its time first, and the next fire is named
// by it: stale, or run late when no instance ran it. A job removed and
// added again under its name is read again. A Lock without a scheduler
// attached, or of a job the Locker cannot find in it, is claimed by its
// own time, and told once per job at Warn: a tick gocron fires late can
// then run twice.
//
// Lock never blocks gocron's tick longer than the lock timeout
// (runonce.WithLockTimeout, runonce.DefaultLockTimeout). Unlock does not wait: the release
// goes out in the background and is retried until it lands, so the
// cancelled context gocron hands the last Unlock at shutdown is fine.
//
// # What the Locker tells
//
// Besides runonce's warnings (windows that differ, a job that runs more
// than once per tick, first attempts of a tick that skip, an outage in two
// lines, overload told as overload), logged with component=gocronlock,
// the Locker warns of gocron's own trap (fleetcheck.go): jobs without
// gocron.WithName share gocron's default name, their function's, and so
// one key; and of each Lock it names no tick for: a RunNow (Info), a job
// it cannot find (Warn, once per job), a fire it does not run (Warn, once
// until the job's fires are named again, and observed as unknown).
// runonce.WithObserver hears every Lock (lockmetrics.Collector.ObserveJob
// exports them).
//
// It tells the ticks gocron did not fire, too. gocron reschedules a job
// once its fire's Lock returns and skips the times already past, so a
// Lock slower than the period, or a late scheduler goroutine, makes it
// fire none of the ticks between; no Lock is made for them. The Locker's
// book sees them at the job's next Lock (skipped.go), and the job's record
// decides each once its window and the lock timeout have passed, at that
// Lock or a later one, or at Close: a tick no instance ran is observed as
// runonce.Lost and told in a line naming the job, the ticks and why ("gocron
// on this instance did not fire them: its scheduler was late", with how
// late); one the record has let go is told unknown; one another instance
// ran is not told. A named tick whose Lock was told unknown is decided so
// too. Each instance tells the ticks it passed over: a tick every
// instance skipped is lost on each. An instance starved of Locks tells
// nothing until its next Lock or Close.
//
// LastRun, and tierlock ls on the root, tell each job's
// last run and who made it; RemoveJob deletes a retired job's nodes.
// runonce.WithSpread spreads the runs over the fleet.
//
// The run nodes are those of gocronlock's versions before runonce: a fleet
// can be upgraded one instance at a time (TestFleetMixed).
//
// # A run's context
//
// A task whose first parameter is a context.Context gets the job's own
// context from gocron, which knows nothing of the lock. Locker.RunContext
// returns the context of the job's run going on in this instance: it is
// cancelled also when the run's lock is lost and when Locker.Close
// releases it, so that a job can stop working under a lock it no longer
// holds. The run's Unlock then returns an error wrapping
// zklock.ErrLockLost, or one matching runonce.ErrClosed (no warning: the program
// closed the Locker itself).
//
// # The Elector
//
// An Elector campaigns in tierlock's election (package election) on one
// goroutine and IsLeader returns nil while it leads. When the leader's
// process dies its session expires, and another instance leads one session
// timeout later (zklock.WithSessionTimeout). A leadership ends, and
// IsLeader says so:
//
//   - when the session cannot vouch for it any more (zklock's loss rules):
//     under zklock's default policy, before another instance can lead;
//   - when its node is deleted by someone else (an operator, tierlock
//     break): as soon as this instance's ZooKeeper server delivers the
//     delete's event. With both instances on one server that is before the
//     next can lead (it must list the queue after its own event); across
//     servers, the old leader's server may deliver later than the next's,
//     and both lead for that lag.
//
// On a session made with zklock.WithLossOnExpiryOnly a leadership outlives
// short disconnections at the price zklock documents: another instance may
// lead up to an eighth of the session timeout before this one is told, and
// gocron runs every job on both meanwhile. Give an Elector a session of
// the default policy.
//
// The Elector makes no per-tick decision: a leadership that passes within
// a tick's spread (a leader that lost its connection after running a
// tick, say) can run that tick twice. Use the Locker where that matters.
//
// Close never waits for user code: the leader handler (WithLeaderHandler)
// runs on a goroutine of its own, and may call Close.
package gocronlock

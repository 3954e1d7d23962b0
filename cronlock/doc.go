// Package cronlock runs robfig/cron v3 jobs once per tick across a fleet
// of processes, on tierlock's ZooKeeper locks: every instance schedules
// every job, and a cron.JobWrapper decides, when a job's timer fires,
// whether this instance runs that tick. It is a thin adapter over package
// runonce, whose doc states the rule and argues it; it is a module of its
// own, so that tierlock does not depend on robfig/cron.
//
//	locker, err := cronlock.New(session, "/myapp/cron")
//	c := cron.New(cron.WithSeconds(), locker.WithChain(cron.Recover(logger)))
//	c.AddJob("*/10 * * * * *", cronlock.Named("report", cron.FuncJob(report)))
//
// or, for one job, cron.NewChain(locker.Wrap("report")).Then(job) in a
// Cron made with locker.WithChain(). WithChain puts the Locker's Wrapper
// last in the Cron's chain and attaches the Cron (Attach), so that the
// Locker reads each fire's scheduled tick; a job that fires from a Cron
// the Locker cannot read (cron.WithChain(locker.Wrapper()) without
// Attach), or that it cannot find in it (cron.Recover around Wrap), is
// told once at Warn: its ticks are then claimed by the claim's time, and
// a tick fired late can run twice.
//
// # Why a lock is not enough
//
// A Redis lock in a JobWrapper (redsync, the wrappers and forks robfig/cron
// users write) is held while the job runs: it keeps runs from overlapping,
// not a tick from running twice. The instances' timers fire hundreds of
// milliseconds apart, and each one whose timer fires after the previous
// holder released finds the lock free and runs the same tick again. The
// rule decides by the tick, dated by the ZooKeeper server's clock: each
// tick runs once when the spread S of one tick's timers across the fleet,
// the window W (runonce.WithWindow, 500 ms by default) and the job's
// period P meet S < W <= P - S - 2r (r: a write's round trip).
//
// # Names
//
// A cron.Job has no name, and the key of its ticks must be the same on
// every instance: Named gives one, or Wrap takes it. A job without a name
// is not run, and not silently merged with the other jobs without one:
// Wrapper says so once, at cron.AddFunc or AddJob, in an Error line naming
// the job's function, and the observer (runonce.WithObserver) hears of
// each of its ticks with ErrUnnamedJob. A nil job, a nil func
// (cron.FuncJob(nil)) or a nil pointer is refused where it is added, and
// never claims a tick. Two jobs of one process under one name run as one
// job: the Locker says so once, as an Error, when the older ticks again
// after the newer's first tick (a job removed and added again under its
// name is one job, not two). A run that panics is told to the observer
// as failed (runonce.ErrPanicked), never as ran, and the panic goes on to
// the wrappers before the Locker's (cron.Recover).
//
// # Ticks
//
// The Locker claims each fire by its scheduled tick, which it reads from
// the Cron (Entry.Prev) with runonce.ClaimTick: the rule compares ticks
// with ticks, so that a tick runs once whatever the hosts' and
// ZooKeeper's clocks. robfig/cron v3 on Go 1.23 and later fires, when a
// stopped process (a SIGSTOP, a suspend, a long GC) resumes, the ticks it
// slept through, late by the stop, then once more a period later; a tick
// more than the job's window late (by this host's clock) that the fleet
// ran is stale, skipped (runonce.ErrStale) and said so; one no instance
// ran (a tick cron.DelayIfStillRunning delayed) runs, late. With the Cron
// attached, a job removed and added again under its name whose old tick
// comes late (cron.DelayIfStillRunning before the Locker's wrapper) is
// not run.
//
// # Schedules
//
// A cron spec's ticks are on the clock: with hosts' clocks kept by NTP,
// every instance's timer fires within milliseconds of the others', plus
// each process's own lag. robfig/cron's @every N counts from the moment
// the job was added, rounded to the second (and a stop moves it: robfig
// computes the next fire from the late one), so @every 1s ticks on whole
// seconds on every instance while @every 10s ticks at each instance's own
// phase, seconds apart: the Locker claims such a job's ticks with
// runonce.ClaimEvery, its window its period, and it runs once per period
// across the fleet, whatever the phases (on the instance whose phase
// comes first). A spec on the clock ("*/10 * * * * *" with
// cron.WithSeconds) runs each tick once, on time.
// @every rounds an interval under a second up to one second, and one
// above a second down to whole seconds (@every 1500ms ticks every
// second). A spec's
// time zone (CRON_TZ=) changes when its ticks fire, not the rule: every
// instance must read the spec alike.
//
// # What it tells, and what it keeps
//
// runonce's warnings (windows that differ, a job that runs more than once
// per tick, first attempts of a tick that skip, an outage of ZooKeeper in
// two lines, overload told as overload) are logged with
// component=cronlock. runonce.WithObserver hears every tick
// (lockmetrics.Collector.ObserveJob exports the events); LastRun, and
// tierlock ls on the root, tell each job's last run and who made it;
// RemoveJob deletes a retired job's nodes; runonce.WithSpread spreads the
// runs over the fleet. The run nodes are gocronlock's: the same root can
// hold the jobs of both.
//
// # A run's context
//
// robfig/cron gives a job no context, nor its tick. RunContext returns the
// context of the job's run going on in this instance, cancelled when the
// job's lock is lost and when the Locker is closed, so that a job can stop
// working under a lock it no longer holds; runonce.TickOf reads from it
// the tick the run claimed, for a job that processes its tick's data.
package cronlock

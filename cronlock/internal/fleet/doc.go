// Package fleet is cronlock's fleet test: real robfig/cron v3 schedulers in
// processes of their own, each wrapping its jobs in a distributed lock,
// and a checker that counts, for every (job, tick), how many of the fleet's
// instances ran it.
//
// # The worker
//
// [Main] runs one instance: a cron.Cron whose jobs are wrapped, each by its
// name, in the lock its -lock flag names, with its timers shifted by its
// -offset (a fleet's timers 0, 150 and 300 ms apart). It writes a record of
// each fire and each run to its stdout, one line each, which the test
// gathers from all the instances. [Check] counts the runs per (job, tick).
// Per instance, -form picks the lock's API form (wrap: a wrapper per job,
// the Cron attached; chain: the Cron's chain; loose: a wrapper per job,
// the Cron not attached), and -old-record makes it an instance of
// runonce before the tick names (oldrecord.go), for TestFleetClocks'
// mixed fleet.
//
// # The seam: a lock is a file of its own
//
// A lock is registered under a name by [Register], from an init function:
//
//	func init() {
//		Register("mylock", Variant{
//			Backend: ZooKeeper,   // the server the test starts for it
//			Expect:  OncePerTick, // what the fleet test holds it to
//			Open: func(ctx context.Context, c Config) (Lock, error) {
//				// connect to c.Servers, keyed under c.Root, named c.Instance
//				return Lock{Wrap: wrapByName, Close: closeConn}, nil
//			},
//		})
//	}
//
// Open is called once per instance, before any job is added; Lock.Wrap is
// called once per job, with the job's name (the same on every instance)
// and the job to guard, and returns what the scheduler runs on each tick;
// Lock.Close, if not nil, is called once the scheduler stopped and its
// running jobs returned. The worker picks a lock by -lock=name, and the
// fleet test (TestFleet) runs a fleet of every registered lock, starting
// the server its Backend names and holding the fleet to its Expect. So
// adding a lock is one file with one init function and no other change.
//
// Registered here: "none" (no lock: every instance runs every tick, the
// control), "redsync" and "redsync-try" (a Redis lock in a JobWrapper, as
// robfig/cron users write it today; see redsync.go), and "tierlock"
// (cronlock's wrapper; tierlock.go).
//
// # Ticks
//
// robfig/cron fires on the wall clock's boundaries and does not tell a job
// its tick, so each instance's timers are shifted by a cron.ScheduleParser
// that parses a spec as robfig's parser with cron.WithSeconds does and
// delays every time the schedule returns by the instance's offset (robfig
// has no clock to inject, and a time zone moves a clock by whole seconds
// only). The tick a fire serves is the schedule's last time at or before
// the fire's time less the offset (see [TickOf]): a timer fires late,
// never early, so that is the tick whose timer fired. The wrapper that
// records the fire is the outermost, so the tick of a run whose lock made
// it wait is still its timer's.
package fleet

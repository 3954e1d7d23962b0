package fleet

import (
	"github.com/go-co-op/gocron/v2"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/hostclock"
)

// The Locker's API forms (-form): the scheduler made by the Locker
// (Locker.NewScheduler), the scheduler's distributed locker and Attach,
// or each job's (gocron.WithDistributedJobLocker) and Attach.
const (
	FormScheduler = "scheduler"
	FormLocker    = "locker"
	FormJobLocker = "job-locker"
)

var forms = []string{FormScheduler, FormLocker, FormJobLocker}

// newScheduler makes the instance's scheduler, its Locker (nil under the
// Elector: opt is the Elector's) in c's form, and returns the option each
// job takes.
//
// An instance whose clock is off the others' by c.clock (-clock): Go
// reads the wall clock through the vDSO, which libfaketime's preload
// cannot reach. The instance plays it: its jobs start c.clock early
// (c.first), so that gocron fires each tick when the others' clocks read
// its time less c.clock, as a clock c.clock ahead would, and hostclock's
// offset makes runonce name the tick as this instance's clock would
// (internal/hostclock says why nothing else of runonce sees it).
func newScheduler(c config, opt gocron.SchedulerOption, l *gocronlock.Locker, mon *monitor) (gocron.Scheduler, []gocron.JobOption, error) {
	hostclock.SetOffset(c.clock)
	monitored := gocron.WithSchedulerMonitor(mon)
	if l == nil {
		s, err := gocron.NewScheduler(opt, monitored)
		return s, nil, err
	}
	var s gocron.Scheduler
	var jobOpts []gocron.JobOption
	var err error
	switch c.form {
	case FormScheduler:
		s, err = l.NewScheduler(monitored)
	case FormJobLocker:
		s, err = gocron.NewScheduler(monitored)
		jobOpts = []gocron.JobOption{gocron.WithDistributedJobLocker(l)}
	default:
		s, err = gocron.NewScheduler(opt, monitored)
	}
	if err != nil {
		return nil, nil, err
	}
	if c.form != FormScheduler {
		l.Attach(s)
	}
	return s, jobOpts, nil
}

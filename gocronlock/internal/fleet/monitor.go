package fleet

import (
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
)

// monitor is the instance's gocron.SchedulerMonitor: of all it hears it
// keeps, for each run, its scheduled time and its start (gocron calls
// JobSchedulingDelay on the run's goroutine, once Lock let it run, before
// the task), so that a run is counted by the tick gocron ran it for, not
// by its timer's firing: after a stop, gocron fires a tick it slept
// through, late, which its firing would name as a later tick.
//
// Each run's times go to that run's task: JobSchedulingDelay puts them in
// the job's slot (one place), and the task takes them. Two runs of one job
// may be under way at once on one instance (an overloaded one: a tick's
// Lock answered after the next tick fired), and gocron notifies each on its
// own goroutine before its task; a value kept per job, as before, was
// overwritten by the second run's before the first's task read it, so both
// runs were recorded as the second's tick, at its start: "ran twice" 0 s
// apart (an idle make test's TestFleetScale). The second run's
// notification now waits until the first's task has taken its times: the
// slot's send happens before the take's receive, on the run's own
// goroutine before its task.
type monitor struct {
	slots sync.Map // job name -> chan runTimes (one place)
}

// runTimes are a run's scheduled time and its start, once Lock let it run.
type runTimes struct{ scheduled, started time.Time }

var _ gocron.SchedulerMonitor = (*monitor)(nil)

func (m *monitor) slot(job string) chan runTimes {
	c, _ := m.slots.LoadOrStore(job, make(chan runTimes, 1))
	return c.(chan runTimes)
}

// take returns the times of the run of job whose task calls it; false if
// gocron gave none (a run without a scheduled time, which it does not
// notify).
func (m *monitor) take(job string) (runTimes, bool) {
	select {
	case r := <-m.slot(job):
		return r, true
	default:
		return runTimes{}, false
	}
}

// JobSchedulingDelay puts the run's times in its job's slot, once the
// previous run's task has taken its own.
func (m *monitor) JobSchedulingDelay(job gocron.Job, scheduled, started time.Time) {
	m.slot(job.Name()) <- runTimes{scheduled: scheduled, started: started}
}

// The rest of gocron.SchedulerMonitor: nothing to keep.

func (m *monitor) SchedulerStarted()                          {}
func (m *monitor) SchedulerStopped()                          {}
func (m *monitor) SchedulerShutdown()                         {}
func (m *monitor) JobRegistered(gocron.Job)                   {}
func (m *monitor) JobUnregistered(gocron.Job)                 {}
func (m *monitor) JobStarted(gocron.Job)                      {}
func (m *monitor) JobRunning(gocron.Job)                      {}
func (m *monitor) JobFailed(gocron.Job, error)                {}
func (m *monitor) JobCompleted(gocron.Job)                    {}
func (m *monitor) JobExecutionTime(gocron.Job, time.Duration) {}
func (m *monitor) ConcurrencyLimitReached(string, gocron.Job) {}

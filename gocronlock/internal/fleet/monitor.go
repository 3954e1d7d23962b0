package fleet

import (
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
)

// monitor is the instance's gocron.SchedulerMonitor: of all it hears it
// keeps, for each job, the scheduled time of its run under way (gocron
// calls JobSchedulingDelay on the run's goroutine, once Lock let it run,
// before the task), so that a run is counted by the tick gocron ran it
// for, not by its timer's firing: after a stop, gocron fires a tick it
// slept through, late, which its firing would name as a later tick.
type monitor struct {
	scheduled sync.Map // job name -> time.Time
	started   sync.Map // job name -> time.Time: its run's start, once Lock let it run
}

var _ gocron.SchedulerMonitor = (*monitor)(nil)

// tick returns the scheduled time of job's run under way; false if none
// was heard.
func (m *monitor) tick(job string) (time.Time, bool) {
	at, ok := m.scheduled.Load(job)
	if !ok {
		return time.Time{}, false
	}
	return at.(time.Time), true
}

// JobSchedulingDelay keeps the run's scheduled time, and its start.
func (m *monitor) JobSchedulingDelay(job gocron.Job, scheduled, started time.Time) {
	m.scheduled.Store(job.Name(), scheduled)
	m.started.Store(job.Name(), started)
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

package lockmetrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Scheduled jobs. runonce's Runner (and so gocronlock's Locker and
// cronlock's, modules of their own which this package does not import)
// reports each Claim, one per job and tick on each instance, through
// runonce.WithObserver (gocronlock.WithObserver); ObserveJob takes the
// event's fields:
//
//	runonce.WithObserver(func(e runonce.Event) {
//		m.ObserveJob(e.Job, e.Outcome.String(), e.Latency)
//	})

// jobOutcomes are the values of the job metrics' outcome label: the names
// of runonce.Outcome.
var jobOutcomes = [...]string{"ran", "held", "already_ran", "yielded", "stale", "unknown", "lost", "failed"} // failed last: the default

// jobSeries are one job name's counters, by outcome.
type jobSeries [len(jobOutcomes)]prometheus.Counter

// jobs keeps the job names apart, at most WithMaxLocks of them, as
// seriesFor does for lock names (the same reasoning: a name's series are
// complete before they are stored).
type jobs struct {
	series sync.Map // job name -> *jobSeries
	mu     sync.Mutex
	names  int
}

func newJobMetrics(ns string, buckets []float64) (*prometheus.CounterVec, *prometheus.HistogramVec) {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "job_locks_total",
			Help: "Scheduled jobs' Lock calls (gocronlock), one per job and tick on each instance, by outcome: ran, held (the job's lock was held: not run here, lost unless its holder runs it after), already_ran, yielded (left to another instance), stale (a tick fired more than its window late, which the fleet ran), unknown (a tick this instance cannot run, whose run the job's record can neither show nor rule out: the fleet may have run it), lost (a tick this instance's scheduler did not fire, which the job's record shows no instance ran: told by each instance that did not fire it, so the fleet's lost ticks are the distinct jobs and ticks, not the sum over instances), failed."},
			[]string{"job", "outcome"}),
		prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "job_lock_seconds",
			Help: "Scheduled jobs' Lock latency (gocronlock), from its entry to its return, by outcome.", Buckets: buckets},
			[]string{"outcome"})
}

// ObserveJob records one Lock call of a scheduled job: its outcome (one
// of ran, held, already_ran, yielded, stale, unknown, lost, failed; anything else
// counts as failed) and its latency. Job names past WithMaxLocks are counted as
// OtherLock. It is a map read and two atomic adds.
func (c *Collector) ObserveJob(job, outcome string, latency time.Duration) {
	if c == nil {
		return
	}
	o := len(jobOutcomes) - 1 // failed
	for i, name := range jobOutcomes {
		if name == outcome {
			o = i
		}
	}
	c.jobSeriesFor(job)[o].Inc()
	c.jobLatency[o].Observe(latency.Seconds())
}

// jobSeriesFor returns job's counters, made on its first call.
func (c *Collector) jobSeriesFor(job string) *jobSeries {
	if s, ok := c.jobs.series.Load(job); ok {
		return s.(*jobSeries)
	}
	c.jobs.mu.Lock()
	defer c.jobs.mu.Unlock()
	if s, ok := c.jobs.series.Load(job); ok {
		return s.(*jobSeries)
	}
	name := job
	if c.jobs.names >= c.cfg.maxLocks {
		name = OtherLock
		if s, ok := c.jobs.series.Load(name); ok {
			return s.(*jobSeries)
		}
	} else {
		c.jobs.names++
	}
	s := new(jobSeries)
	for i, o := range jobOutcomes {
		s[i] = c.jobRuns.WithLabelValues(name, o)
	}
	c.jobs.series.Store(name, s)
	return s
}

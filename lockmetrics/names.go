package lockmetrics

import "github.com/prometheus/client_golang/prometheus"

// series are one lock name's metrics, looked up once per name so that an
// event costs a map read and atomic adds, not a label hash per metric.
type series struct {
	wait                     [len(waitOutcomes)]prometheus.Observer
	hold                     prometheus.Observer
	holders, waiters         prometheus.Gauge
	viaZooKeeper, viaHandoff prometheus.Counter
	failures                 [len(failureReasons)]prometheus.Counter
	losses                   [len(lossReasons)]prometheus.Counter
	revocations, txns        prometheus.Counter
}

// seriesFor returns the series of the lock at path, making them on the
// lock name's first event. Names past maxLocks share OtherLock's series:
// once full is set, an unknown name goes there without taking mu.
//
// Where goroutines meet: a series is complete before makeNamed stores it,
// and a sync.Map Store happens before the Load that returns its value, so
// no goroutine sees a half-made series. Two goroutines with a new name
// both reach makeNamed; mu orders them, and the second finds the first's
// series, so a name is counted once.
func (c *Collector) seriesFor(path string) *series {
	name := c.cfg.lockName(path)
	if s, ok := c.series.Load(name); ok {
		return s.(*series)
	}
	if c.full.Load() {
		return c.otherSeries(name)
	}
	if s := c.makeNamed(name); s != nil {
		return s
	}
	return c.otherSeries(name)
}

// makeNamed makes name's series, or returns nil when there are maxLocks
// names already. Under mu, so that names counts each name once.
func (c *Collector) makeNamed(name string) *series {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.series.Load(name); ok { // made while we waited for mu
		return s.(*series)
	}
	if c.names >= c.cfg.maxLocks {
		c.full.Store(true)
		return nil
	}
	c.names++
	s := c.makeSeries(name)
	c.series.Store(name, s)
	return s
}

// otherSeries returns OtherLock's series, for name, a name too many.
func (c *Collector) otherSeries(name string) *series {
	c.warnOnce.Do(func() {
		c.cfg.logger.Warn("lockmetrics: too many lock names, the rest are counted as \""+OtherLock+"\"; see WithLockName",
			"max", c.cfg.maxLocks, "first_extra", name)
	})
	s, ok := c.series.Load(OtherLock)
	if !ok {
		s, _ = c.series.LoadOrStore(OtherLock, c.makeSeries(OtherLock))
	}
	return s.(*series)
}

// makeSeries creates every series of a lock name, so that they all appear
// (at zero) from its first event on: a rate over a counter that springs
// into being misses its first increments.
func (c *Collector) makeSeries(name string) *series {
	s := &series{
		hold:         c.hold.WithLabelValues(name),
		holders:      c.holders.WithLabelValues(name),
		waiters:      c.waiters.WithLabelValues(name),
		viaZooKeeper: c.acquisitions.WithLabelValues(name, "zookeeper"),
		viaHandoff:   c.acquisitions.WithLabelValues(name, "handoff"),
		revocations:  c.revocations.WithLabelValues(name),
		txns:         c.txns.WithLabelValues(name),
	}
	for i, o := range waitOutcomes {
		s.wait[i] = c.wait.WithLabelValues(name, o)
	}
	for i, r := range failureReasons {
		s.failures[i] = c.failures.WithLabelValues(name, r)
	}
	for i, lr := range lossReasons {
		s.losses[i] = c.losses.WithLabelValues(name, lr.label)
	}
	return s
}

// Prefix returns a lock name function that keeps the first n elements of
// a lock's path: Prefix(1) names "/jobs/42/lock" "/jobs", and Prefix(2)
// names a Registry's lock "/app/jobs/<key>" by its root "/app/jobs". A
// path with fewer elements is its own name. The names are bounded when
// the first n levels of the tree are fixed. n < 1 is taken as 1.
func Prefix(n int) func(path string) string {
	n = max(n, 1)
	return func(path string) string {
		seen := 0
		for i := 1; i < len(path); i++ {
			if path[i] == '/' {
				if seen++; seen == n {
					return path[:i]
				}
			}
		}
		return path
	}
}

package fleet

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tierlock/tierlock/runonce"
)

// latencies keeps an instance's Lock latencies (runonce.WithObserver),
// for the percentiles its last record reports.
type latencies struct {
	first  time.Time     // the instance's tick 0
	period time.Duration // its jobs' period

	mu       sync.Mutex
	ds       []time.Duration
	lags     []time.Duration // how late each Lock was called after its tick
	outcomes map[string]int  // by runonce.Outcome's name
	lastErr  error           // the last failure's
}

// observe keeps e's latency, and how late its Lock was called after its
// tick.
func (l *latencies) observe(e runonce.Event) {
	entry := e.Entry
	l.mu.Lock()
	l.ds = append(l.ds, e.Latency)
	if l.period > 0 {
		tick := l.first.Add(time.Duration(tickOf(entry, l.first, l.period)) * l.period)
		l.lags = append(l.lags, max(0, entry.Sub(tick)))
	}
	if l.outcomes == nil {
		l.outcomes = map[string]int{}
	}
	l.outcomes[e.Outcome.String()]++
	if e.Outcome == runonce.Failed {
		l.lastErr = e.Err
	}
	l.mu.Unlock()
}

// counts returns the outcomes, name=count, and the last failure.
func (l *latencies) counts() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for _, o := range []string{"ran", "held", "already_ran", "yielded", "failed"} {
		parts = append(parts, fmt.Sprintf("%s=%d", o, l.outcomes[o]))
	}
	return strings.Join(parts, ","), l.lastErr
}

// summary returns the count, median, 99th percentile and largest of one
// of l's series (&l.ds, the Lock latencies, or &l.lags), read under l.mu.
func (l *latencies) summary(series *[]time.Duration) (n int, p50, p99, top time.Duration) {
	l.mu.Lock()
	ds := slices.Clone(*series)
	l.mu.Unlock()
	return quantiles(ds)
}

// quantiles returns ds's count, median, 99th percentile and largest.
func quantiles(ds []time.Duration) (n int, p50, p99, top time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return len(ds), at(0.5), at(0.99), ds[len(ds)-1]
}

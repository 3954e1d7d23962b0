package runonce

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// tally is an episode of ticks of one kind on this instance (stale,
// unknown): told in a line when it begins and one when it ends, naming
// every job with the ticks it cost.
type tally struct {
	mu    sync.Mutex
	since time.Time
	jobs  map[string]int64 // nil: no episode
}

// add counts a tick of job; it reports whether the episode begins.
func (t *tally) add(job string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	begins := t.jobs == nil
	if begins {
		t.jobs, t.since = map[string]int64{}, time.Now()
	}
	t.jobs[job]++
	return begins
}

// ended ends the episode, if one is on: how many ticks, and of which
// jobs.
func (t *tally) ended() (n int64, jobs string, since time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.jobs == nil {
		return 0, "", time.Time{}, false
	}
	for _, c := range t.jobs {
		n += c
	}
	jobs, since, t.jobs = jobsLine(t.jobs), t.since, nil
	return n, jobs, since, true
}

// end tells the episode's end to log, if one is on, in a line what, with
// count the name of its ticks' count.
func (t *tally) end(log *slog.Logger, what, count string) {
	if n, jobs, since, ok := t.ended(); ok {
		log.Warn(what, count, n, "jobs", jobs, "for", time.Since(since).Round(time.Millisecond))
	}
}

// jobsLine names the jobs of counts, each with its count, sorted.
func jobsLine(counts map[string]int64) string {
	var b strings.Builder
	for _, job := range slices.Sorted(maps.Keys(counts)) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", job, counts[job])
	}
	return b.String()
}

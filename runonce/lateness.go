package runonce

import (
	"math"
	"runtime/metrics"
	"sync"
	"time"
)

// How late this instance is. A run starts late by two
// amounts: the scheduler's lag, how late it calls Claim after the tick, and
// the Claim's own latency. The rule counts neither, but a fleet too busy
// for its jobs pays for both: a Claim answered too late cannot confirm its
// run (ErrSlowWrite, a tick lost), one past its timeout is skipped, and
// timers fired later than the window apart run a tick twice. Without a
// measure the Runner told those as a misconfigured fleet or an outage.
//
// The Claim's latency is measured, from Claim's entry to its return. The
// scheduler's lag is not seen by the Runner (neither gocron nor
// robfig/cron tells a job its tick); what this process adds to it is: the Go runtime's scheduling
// latency (/sched/latencies:seconds), how long goroutines wait to run
// once runnable, which every timer a scheduler fires waits too. Both are
// kept as histograms over the last second and the one before, read once a
// second by a Claim: no goroutine and no request of their own.

// lateBuckets are the Claim latency histogram's: bucket i holds latencies
// up to 2^(i/4) ms, the last everything above (about 55 s).
const lateBuckets = 64

// latency is a histogram of Claim latencies.
type latency [lateBuckets]int64

func (h *latency) add(d time.Duration) {
	i := 0
	if ms := float64(d) / float64(time.Millisecond); ms > 1 {
		i = min(lateBuckets-1, int(math.Ceil(4*math.Log2(ms))))
	}
	h[i]++
}

// p99 returns the 99th percentile of a and b together, as its bucket's
// upper bound; 0 when both are empty.
func p99(a, b *latency) time.Duration {
	var n int64
	for i := range a {
		n += a[i] + b[i]
	}
	if n == 0 {
		return 0
	}
	var acc int64
	for i := range a {
		if acc += a[i] + b[i]; acc*100 >= n*99 {
			return time.Duration(math.Exp2(float64(i)/4) * float64(time.Millisecond))
		}
	}
	return 0 // not reached
}

// schedLag reads the process's scheduling latency.
type schedLag struct {
	sample [1]metrics.Sample
	prev   []uint64
}

// p99 returns the 99th percentile of the scheduling latencies since its
// last call (the first call: since the process started).
func (s *schedLag) p99() time.Duration {
	s.sample[0].Name = "/sched/latencies:seconds"
	metrics.Read(s.sample[:])
	if s.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	h := s.sample[0].Value.Float64Histogram()
	if len(s.prev) != len(h.Counts) {
		s.prev = make([]uint64, len(h.Counts))
	}
	var n uint64
	for i, c := range h.Counts {
		n += c - s.prev[i]
	}
	var acc uint64
	q := time.Duration(0)
	for i, c := range h.Counts {
		if acc += c - s.prev[i]; n > 0 && acc*100 >= n*99 {
			// The bucket's upper bound, the last finite one for the last.
			q = time.Duration(h.Buckets[min(i+1, len(h.Buckets)-2)] * float64(time.Second))
			break
		}
	}
	copy(s.prev, h.Counts)
	return max(q, 0)
}

// lateness is the Runner's measure: the Claim latencies of this second and
// the last, the scheduling latency of the last.
type lateness struct {
	mu      sync.Mutex
	start   time.Time // this second's
	cur     latency
	prev    latency
	rtt     [2]latency // the run node's writes' round trips, this second's and the last
	sched   schedLag
	lagP99  time.Duration
	started bool
	rolled  bool // a second has passed since the first Claim: lagP99 is one's
}

// observe adds a Claim's latency.
func (t *lateness) observe(d time.Duration) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.started {
		t.started, t.start = true, now
		t.sched.p99() // from now on
	}
	switch since := now.Sub(t.start); {
	case since >= 2*time.Second: // idle: nothing of the last second
		t.prev, t.cur, t.start, t.rolled = latency{}, latency{}, now, true
		t.rtt = [2]latency{}
		t.lagP99 = t.sched.p99()
	case since >= time.Second:
		t.prev, t.cur, t.start, t.rolled = t.cur, latency{}, now, true
		t.rtt = [2]latency{t.rtt[1], {}}
		t.lagP99 = t.sched.p99()
	}
	t.cur.add(d)
}

// observeRTT adds a run node write's round trip (its send to its answer).
func (t *lateness) observeRTT(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rtt[1].add(d)
}

// rttP99 returns the writes' round trip's 99th percentile over this second
// and the last (0: none).
func (t *lateness) rttP99() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return p99(&t.rtt[0], &t.rtt[1])
}

// figures returns the Claim latency's 99th percentile over this second and
// the last, and the scheduling latency's over the last.
func (t *lateness) figures() (lock, lag time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started && !t.rolled {
		// The first second: the scheduling latency since the first Claim
		// (read only then, and only where a failure or a symptom asks).
		t.lagP99 = max(t.lagP99, t.sched.p99())
	}
	return p99(&t.cur, &t.prev), t.lagP99
}

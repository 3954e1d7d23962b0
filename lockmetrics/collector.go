package lockmetrics

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Errors of this package.
var (
	// ErrNilRegisterer reports a New without a prometheus.Registerer (nil,
	// or a nil pointer such as a nil *prometheus.Registry).
	ErrNilRegisterer = errors.New("lockmetrics: nil prometheus.Registerer")
	// ErrInvalidOption reports an option New cannot use.
	ErrInvalidOption = errors.New("lockmetrics: invalid option")
)

// DefaultBuckets are the bounds, in seconds, of the wait and hold
// histograms: ×4 steps from 100µs (a local hand-off, a re-check) to 26s (a
// long queue behind another process).
var DefaultBuckets = prometheus.ExponentialBuckets(0.0001, 4, 10)

// DefaultMaxLocks is how many lock names a Collector keeps apart by default.
const DefaultMaxLocks = 100

// OtherLock is the lock label of the locks beyond WithMaxLocks.
const OtherLock = "other"

// Collector turns tier events and zklock session states into Prometheus
// metrics. Pass Observe to tier.WithObserver (for every Lock or Registry
// to measure), SessionListener() to zklock.WithStateListener, and
// ObserveJob to runonce's observer (jobs.go). A
// Collector is a prometheus.Collector: New registers it, and
// Registerer.Unregister removes it. All methods are safe for concurrent
// use; on a nil *Collector they do nothing.
type Collector struct {
	cfg config

	wait, hold        *prometheus.HistogramVec
	holders, waiters  *prometheus.GaugeVec
	acquisitions      *prometheus.CounterVec
	failures, losses  *prometheus.CounterVec
	revocations, txns *prometheus.CounterVec
	sessions          *prometheus.GaugeVec   // state
	transitions       *prometheus.CounterVec // state
	stalled           *prometheus.GaugeVec   // connection (stall.go)
	stalls            *prometheus.CounterVec // connection
	jobRuns           *prometheus.CounterVec // job, outcome (jobs.go)
	jobLatencyVec     *prometheus.HistogramVec
	jobLatency        [len(jobOutcomes)]prometheus.Observer
	jobs              jobs

	// The series of each lock name, made on its first event (see names.go).
	series   sync.Map   // lock name -> *series
	mu       sync.Mutex // serializes making series, and so counting names
	names    int        // names made, OtherLock excepted
	full     atomic.Bool
	warnOnce sync.Once
}

type config struct {
	namespace string
	lockName  func(path string) string
	maxLocks  int
	buckets   []float64
	logger    *slog.Logger
}

// Option configures New.
type Option func(*config) error

// WithNamespace sets the metric names' prefix (default "tierlock"), for a
// second Collector on the same registry.
func WithNamespace(ns string) Option {
	return func(c *config) error {
		if !nameRE.MatchString(ns) {
			return fmt.Errorf("%w: namespace %q: want [a-zA-Z_][a-zA-Z0-9_]*", ErrInvalidOption, ns)
		}
		c.namespace = ns
		return nil
	}
}

var nameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// WithLockName sets how a lock's path becomes its "lock" label (default:
// the constant "all"; see the package doc for why, and Prefix). fn must be
// quick and return few distinct values: it runs on every event.
func WithLockName(fn func(path string) string) Option {
	return func(c *config) error {
		if fn == nil {
			return fmt.Errorf("%w: nil lock name function", ErrInvalidOption)
		}
		c.lockName = fn
		return nil
	}
}

// WithMaxLocks bounds the distinct lock labels (default DefaultMaxLocks):
// names past the bound are counted as OtherLock, with a warning logged
// once.
func WithMaxLocks(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: max locks %d: want at least 1", ErrInvalidOption, n)
		}
		c.maxLocks = n
		return nil
	}
}

// WithBuckets sets the histograms' upper bounds in seconds (default
// DefaultBuckets): at least one, strictly increasing.
func WithBuckets(b ...float64) Option {
	return func(c *config) error {
		if len(b) == 0 {
			return fmt.Errorf("%w: no buckets", ErrInvalidOption)
		}
		for i := 1; i < len(b); i++ {
			if !(b[i] > b[i-1]) {
				return fmt.Errorf("%w: buckets %v: not strictly increasing", ErrInvalidOption, b)
			}
		}
		c.buckets = slices.Clone(b)
		return nil
	}
}

// WithLogger sets the logger of the one warning a Collector can give
// (default: slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		c.logger = l
		return nil
	}
}

// New makes a Collector and registers it on reg. A second Collector with
// the same namespace on one registry is refused with an error that wraps
// prometheus.AlreadyRegisteredError.
func New(reg prometheus.Registerer, opts ...Option) (*Collector, error) {
	if isNil(reg) {
		return nil, ErrNilRegisterer
	}
	cfg := config{
		namespace: "tierlock",
		lockName:  func(string) string { return "all" },
		maxLocks:  DefaultMaxLocks,
		buckets:   DefaultBuckets,
		logger:    slog.Default(),
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	c := newCollector(cfg)
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("lockmetrics: register: %w", err)
	}
	return c, nil
}

// isNil reports a nil Registerer, typed or not: a nil *prometheus.Registry
// in the interface would panic in Register.
func isNil(reg prometheus.Registerer) bool {
	if reg == nil {
		return true
	}
	v := reflect.ValueOf(reg)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func newCollector(cfg config) *Collector {
	ns := cfg.namespace
	hist := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: name, Help: help, Buckets: cfg.buckets}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help}, labels)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
	}
	c := &Collector{
		cfg:          cfg,
		wait:         hist("acquire_wait_seconds", "Time from an acquisition's call to its outcome: acquired, canceled (its context ended), failed (any other error).", "lock", "outcome"),
		hold:         hist("hold_seconds", "How long holds lasted, from acquisition to the last Release (or Close).", "lock"),
		holders:      gauge("holders", "Holds acquired and not yet ended (a lost hold counts until its Release).", "lock"),
		waiters:      gauge("waiters", "Goroutines inside a blocking Acquire (not re-entries).", "lock"),
		acquisitions: counter("acquisitions_total", "Acquisitions by the tier they stopped at: zookeeper (a node) or handoff (passed locally, node kept).", "lock", "tier"),
		failures:     counter("acquire_failures_total", "Acquisitions that gave up, by reason: canceled, deadline_exceeded, closed, error.", "lock", "reason"),
		losses:       counter("holds_lost_total", "ZooKeeper holds that ended without Release, by reason: disconnected, lease_expired, session_expired, node_deleted, session_closed, other.", "lock", "reason"),
		revocations:  counter("revocations_total", "Holds revoked by another client.", "lock"),
		txns:         counter("guarded_write_failures_total", "Writes guarded by the lock that failed because the hold was gone.", "lock"),
		sessions:     gauge("session_state", "ZooKeeper sessions in each state (one session: 1 for its state, 0 for the others); closed sessions stay counted under closed.", "state"),
		transitions:  counter("session_transitions_total", "ZooKeeper session state changes, by the state entered (a short disconnection shows here, not always in session_state).", "state"),
		stalled:      gauge("stalled_locks", "Locks whose waits stand behind another session's nodes, by that session's connection: none (no server lists it: its process may be gone, its nodes stay until it expires) or unknown (the servers refuse cons; stood behind it a third of the session timeout).", "connection"),
		stalls:       counter("stalls_total", "Sessions found stalling this session's waits, once per episode, by their connection: none or unknown.", "connection"),
	}
	c.jobRuns, c.jobLatencyVec = newJobMetrics(ns, cfg.buckets)
	for i, o := range jobOutcomes {
		c.jobLatency[i] = c.jobLatencyVec.WithLabelValues(o)
	}
	c.initSessions()
	for _, conn := range stallConnections {
		c.stalled.WithLabelValues(conn)
		c.stalls.WithLabelValues(conn)
	}
	return c
}

// vecs are the collector's metrics, for Describe and Collect.
func (c *Collector) vecs() []prometheus.Collector {
	return []prometheus.Collector{c.wait, c.hold, c.holders, c.waiters, c.acquisitions,
		c.failures, c.losses, c.revocations, c.txns, c.sessions, c.transitions, c.stalled, c.stalls, c.jobRuns, c.jobLatencyVec}
}

// Describe is prometheus.Collector's.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	if c == nil {
		return
	}
	for _, v := range c.vecs() {
		v.Describe(ch)
	}
}

// Collect is prometheus.Collector's.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c == nil {
		return
	}
	for _, v := range c.vecs() {
		v.Collect(ch)
	}
}

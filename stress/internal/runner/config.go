// Package runner carries out a stress run on the parent's side: it finds
// or starts ZooKeeper (and, for redsync, a redis-server: redis.go), makes
// the lock paths, starts each implementation's workers (internal/fleet),
// lets them run (with faults: internal/fault), samples the paths meanwhile
// (internal/sample), and collects and checks what the workers recorded
// (internal/exclusion) into a [Run].
package runner

import (
	"net"
	"strconv"
	"time"

	"github.com/tierlock/tierlock/stress/internal/cells"
	"github.com/tierlock/tierlock/stress/internal/fault"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// Config is what the flags say.
type Config struct {
	Impls      []proto.Impl  `json:"impls"`
	Mix        []MixMember   `json:"mix,omitempty"` // -mix: the members of one mixed run
	Procs      int           `json:"procs"`
	Goroutines int           `json:"goroutines"`
	Paths      int           `json:"paths"`
	Pick       string        `json:"pick"`
	Duration   time.Duration `json:"duration_ns,omitempty"`
	// Warmup runs before the measured window of a timed run without
	// faults (see Window); Probe is the length of each of the limits'
	// probes run right after each implementation (0: none; see Limits).
	Warmup         time.Duration `json:"warmup_ns"`
	Probe          time.Duration `json:"probe_ns"`
	Acquisitions   int64         `json:"acquisitions,omitempty"`
	Hold           time.Duration `json:"hold_ns"`
	HoldMode       string        `json:"hold_mode"`
	Handoff        bool          `json:"handoff"`
	HandoffMax     int           `json:"handoff_max"`
	HandoffMaxHold time.Duration `json:"handoff_max_hold_ns"`
	ZK             []string      `json:"zk,omitempty"`
	Root           string        `json:"root"`
	SessionTimeout time.Duration `json:"session_timeout_ns"`
	ConnectTimeout time.Duration `json:"connect_timeout_ns"`
	Timeout        time.Duration `json:"timeout_ns"`
	// Spread connects worker slot i to server i mod n only (a matrix on an
	// ensemble), instead of the whole list, which go-zookeeper shuffles.
	Spread bool          `json:"spread,omitempty"`
	Sample time.Duration `json:"sample_ns"`
	// Fault injection: the kinds picked from (nil: none), the mean time
	// between faults and the seed of the schedule.
	Faults     []fault.Kind  `json:"fault,omitempty"`
	FaultEvery time.Duration `json:"fault_every_ns,omitempty"`
	FaultSeed  int64         `json:"fault_seed,omitempty"`
	// Writes: in a run with faults, every exclusive hold writes to the
	// guarded resources (stress/internal/writes), whose histories are
	// checked for stale writes.
	Writes bool `json:"writes,omitempty"`
	// Recipe is what the workers take (proto.Mutex, RW or Semaphore):
	// with RW a fraction Readers of the holds are reads; with Semaphore
	// each hold takes Permits of the Leases leases of its path.
	Recipe  proto.Recipe `json:"recipe"`
	Readers float64      `json:"readers,omitempty"`
	Leases  int          `json:"leases,omitempty"`
	Permits int          `json:"permits,omitempty"`
	// Members: with proto.Multi, the locks of each multi-lock hold.
	Members int `json:"members,omitempty"`

	// Metrics is -metrics: host:port of the worker in slot 0; the worker
	// in slot i serves on port+i ("": no metrics).
	Metrics string `json:"-"`

	// Matrix is the plan of a matrix run (-matrix), nil for one run.
	Matrix *cells.Spec `json:"-"`

	JSON    string `json:"-"`
	Report  string `json:"-"`
	Quiet   bool   `json:"-"`
	Verbose bool   `json:"-"`
}

// MixMember is one implementation of a mixed run and its number of
// worker processes.
type MixMember struct {
	Impl  proto.Impl `json:"impl"`
	Procs int        `json:"procs"`
}

// ImplOf is the implementation of the worker in slot for a run of name.
func (c Config) ImplOf(name proto.Impl, slot int) proto.Impl {
	if name != proto.Mix {
		return name
	}
	for _, m := range c.Mix {
		if slot < m.Procs {
			return m.Impl
		}
		slot -= m.Procs
	}
	return ""
}

// MetricsAddr is where the worker in slot serves its metrics: the -metrics
// port plus slot ("" without -metrics; parseFlags checked the address).
func (c Config) MetricsAddr(slot int) string {
	if c.Metrics == "" {
		return ""
	}
	host, port, _ := net.SplitHostPort(c.Metrics)
	p, _ := strconv.Atoi(port)
	return net.JoinHostPort(host, strconv.Itoa(p+slot))
}

// faultSettings is what the fault injector needs of c.
func (c Config) faultSettings() fault.Settings {
	return fault.Settings{
		Kinds: c.Faults, Every: c.FaultEvery, Seed: c.FaultSeed, Procs: c.Procs,
		Duration: c.Duration, Timeout: c.Timeout, SessionTimeout: c.SessionTimeout, ConnectTimeout: c.ConnectTimeout,
	}
}

// semaphoreSize is the number of leases of a semaphore run, 0 otherwise:
// the checker's Options.Permits.
func (c Config) semaphoreSize() int {
	if c.Recipe == proto.Semaphore {
		return c.Leases
	}
	return 0
}

// Windowed reports whether runs of c are measured over a window after a
// warm-up (a timed run without faults), rather than whole.
func (c Config) Windowed() bool { return c.Acquisitions == 0 && c.Faults == nil }

// warmup is the warm-up of c's runs: none when they are measured whole.
func (c Config) warmup() time.Duration {
	if !c.Windowed() {
		return 0
	}
	return c.Warmup
}

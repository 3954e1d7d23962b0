package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// Config is what a lock is opened with, on one instance.
type Config struct {
	// Servers are the lock's servers, host:port each: the Redis server's
	// for a Redis lock, ZooKeeper's for tierlock.
	Servers []string
	// Root is the fleet's key prefix or root path: the same on every
	// instance of a fleet, and no other fleet's.
	Root string
	// Instance is this instance's name, as the records name it.
	Instance string
	// Logger is the instance's log (its stderr).
	Logger *slog.Logger
	// Windows are jobs' windows, by name, for a lock that has them, and
	// Window the other jobs' (0: the lock's default).
	Windows map[string]time.Duration
	Window  time.Duration
	// LockTimeout is the lock's timeout, for a lock that has one (0: its
	// default).
	LockTimeout time.Duration
	// SessionTimeout is the session's timeout, for a lock that has one
	// (0: its default).
	SessionTimeout time.Duration
	// Observe, if the lock can, is told each fire's outcome (runonce's
	// names: ran, held, already_ran, yielded, failed, stale, lost) on the
	// fire's goroutine, with the scheduled time it claimed (robfig/cron's
	// Entry.Prev; zero when it claimed none).
	Observe func(job, outcome string, tick time.Time)
}

// Lock is a lock opened on one instance.
type Lock struct {
	// Wrap returns what the scheduler runs for the job named name on each
	// of its ticks: job, guarded by the lock. It is called once per job,
	// before the scheduler starts; name is the same on every instance.
	Wrap func(name string, job cron.Job) cron.Job
	// Close, if not nil, releases what Open took; it is called once the
	// scheduler stopped and the runs going on returned.
	Close func() error
	// Attach, if not nil, is given the scheduler once the jobs are added,
	// before it starts.
	Attach func(*cron.Cron)
	// Chain and Named, if not nil, are the lock's other API form
	// (-form chain): Chain(wrappers...) is the cron.Option that makes the
	// Cron's chain wrappers followed by the lock's, and Named names a job
	// for it.
	Chain func(wrappers ...cron.JobWrapper) cron.Option
	Named func(name string, job cron.Job) cron.Job
	// RunTick, if not nil, returns the scheduled time the run of the job
	// named name going on claimed (robfig/cron's Entry.Prev), false when
	// it claimed none: a run is named by it rather than by the job's last
	// fire, which a fire of a later tick may have been meanwhile.
	RunTick func(name string) (time.Time, bool)
}

// Factory opens a lock for one instance.
type Factory func(ctx context.Context, c Config) (Lock, error)

// Backend is the server a lock needs, which the fleet test starts.
type Backend int

// The backends.
const (
	NoServer  Backend = iota // no server: Config.Servers is empty
	Redis                    // a redis-server (internal/redisserver)
	ZooKeeper                // a ZooKeeper server (internal/zkserver)
)

// Expect is what the fleet test holds a lock's fleet to.
type Expect int

// The expectations.
const (
	// OncePerTick: every tick runs once: at least MinCoverage of the
	// (job, tick) run, and none more than once.
	OncePerTick Expect = iota + 1
	// EveryInstance: every instance runs every tick (the control, no
	// lock): the check's own check.
	EveryInstance
	// Repeats: a lock held while the job runs and no longer, which runs
	// most ticks more than once in this fleet (more than half of them): the
	// failure it is measured for.
	Repeats
)

// MinCoverage is the share of the (job, tick) that a fleet held to
// OncePerTick must run.
const MinCoverage = 0.999

// Variant is a registered lock.
type Variant struct {
	Backend Backend
	Expect  Expect
	Open    Factory
}

var registry struct {
	mu       sync.Mutex
	variants map[string]Variant
}

// Register makes the lock v available under name, to the worker's -lock
// flag and to the fleet test. It is called from init functions; a name
// registered twice, or a Variant without Open or Expect, is a mistake in
// this package's code, not an input, and panics at start-up as
// database/sql.Register does.
func Register(name string, v Variant) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if v.Open == nil || v.Expect == 0 {
		panic(fmt.Sprintf("fleet: Register(%q): a Variant needs Open and Expect", name))
	}
	if _, dup := registry.variants[name]; dup {
		panic(fmt.Sprintf("fleet: Register(%q) twice", name))
	}
	if registry.variants == nil {
		registry.variants = map[string]Variant{}
	}
	registry.variants[name] = v
}

// Variants returns the registered locks' names, sorted.
func Variants() []string {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return slices.Sorted(maps.Keys(registry.variants))
}

// Lookup returns the lock registered under name.
func Lookup(name string) (Variant, bool) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	v, ok := registry.variants[name]
	return v, ok
}

// none is the control: no lock, so every instance runs every tick.
func init() {
	Register("none", Variant{Backend: NoServer, Expect: EveryInstance,
		Open: func(context.Context, Config) (Lock, error) {
			return Lock{Wrap: func(_ string, job cron.Job) cron.Job { return job }}, nil
		}})
}

package runonce

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"
)

// Defaults of the Runner's options.
const (
	// DefaultWindow is the window of a job without WithWindow or
	// WithJobWindow: right for ticks of 1 s or more whose instances fire
	// within about 300 ms of one another, with writes answered within
	// 100 ms (S < W <= P - S - 2r: see the package doc, "The window").
	DefaultWindow = 500 * time.Millisecond
	// DefaultLockTimeout bounds Claim, whatever ZooKeeper does.
	DefaultLockTimeout = time.Second
)

// Option configures New.
type Option func(*config)

type config struct {
	window   time.Duration
	windows  map[string]time.Duration
	timeout  time.Duration
	acl      []zk.ACL
	observe  func(Event)
	spread   bool
	name     string
	log      *slog.Logger
	boundary string // how the scheduler starts a job on a common boundary
	err      error
}

func defaultConfig() config {
	return config{
		window:  DefaultWindow,
		windows: map[string]time.Duration{},
		timeout: DefaultLockTimeout,
		acl:     zk.WorldACL(zk.PermAll),
	}
}

// fail keeps the first error an option meets.
func (c *config) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// WithWindow sets the window of every job without its own (WithJobWindow):
// a run is skipped when a run of its job started less than d ago by the
// ZooKeeper server's clock. d must exceed the spread of the fleet's timers
// for one tick and stay below the job's period minus that spread (see the
// package doc, "The window"). Default: DefaultWindow.
func WithWindow(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail(fmt.Errorf("%w: window %v", ErrInvalidOption, d))
			return
		}
		c.window = d
	}
}

// WithJobWindow sets the window of the job whose key is job, overriding
// WithWindow for it.
func WithJobWindow(job string, d time.Duration) Option {
	return func(c *config) {
		switch {
		case d <= 0:
			c.fail(fmt.Errorf("%w: window %v for job %q", ErrInvalidOption, d, job))
		case job == "":
			c.fail(fmt.Errorf("%w: window for an empty job name", ErrInvalidOption))
		default:
			c.windows[job] = d
		}
	}
}

// WithLockTimeout bounds how long Claim may take, whatever ZooKeeper does
// (a stalled server, a lost connection): after d it gives up and the run
// is skipped. Default: DefaultLockTimeout.
func WithLockTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail(fmt.Errorf("%w: lock timeout %v", ErrInvalidOption, d))
			return
		}
		c.timeout = d
	}
}

// WithACL sets the ACL of the nodes the Runner creates: its lock nodes and
// the jobs' run nodes. Default: open to all (zk.WorldACL(zk.PermAll)).
func WithACL(acl []zk.ACL) Option {
	return func(c *config) {
		if len(acl) == 0 {
			c.fail(fmt.Errorf("%w: empty ACL", ErrInvalidOption))
			return
		}
		c.acl = acl
	}
}

// WithObserver has fn called with every Claim call's outcome and latency,
// on the caller's goroutine just before Claim returns: fn must be quick.
// lockmetrics.Collector.ObserveJob turns the events into Prometheus
// series.
func WithObserver(fn func(Event)) Option {
	return func(c *config) {
		if fn == nil {
			c.fail(fmt.Errorf("%w: nil observer", ErrInvalidOption))
			return
		}
		c.observe = fn
	}
}

// WithInstanceName names this instance in the run nodes it writes, which
// LastRun and the inspector (tierlock ls) report, and which WithSpread
// tells the instances apart by. Default: host:pid. Each instance of a
// fleet needs a name of its own.
func WithInstanceName(name string) Option {
	return func(c *config) {
		if name == "" {
			c.fail(fmt.Errorf("%w: empty instance name", ErrInvalidOption))
			return
		}
		c.name = name
	}
}

// WithSpread spreads the runs of each job over the fleet: an instance that
// made one of the job's last runs steps back from a tick (ErrYielded) for
// the others it has seen alive since (see the package doc), where without
// it the instance whose timer fires first makes every run. It never makes
// a tick run twice (the rule decides as ever); an instance that leaves
// costs a job at most the one tick left to it. Like the window, it is one
// setting for the whole fleet.
func WithSpread() Option {
	return func(c *config) { c.spread = true }
}

// WithLogger sets the logger of the Runner's warnings (an outage, an
// overload, a fleet outside the rule's envelope) and of its skips (at
// Debug). Default: the session's logger (zklock.WithLogger) with
// component=runonce and the root.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.fail(fmt.Errorf("%w: nil logger", ErrInvalidOption))
			return
		}
		c.log = l
	}
}

// WithBoundaryHint completes the warning that a job runs more than once
// per tick (the fleet's timers for it further apart than its window) with
// how the scheduler in use starts a job on a common boundary: a scheduler
// adapter sets it, in its scheduler's words (gocronlock: "gocron.WithStartAt,
// or a CronJob").
func WithBoundaryHint(hint string) Option {
	return func(c *config) { c.boundary = hint }
}

package gocronlock

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// Defaults of the Locker's and the Elector's options.
const (
	// DefaultWindow is the window of a job without WithWindow or
	// WithJobWindow: right for ticks of 1 s or more whose instances fire
	// within about 400 ms of one another.
	DefaultWindow = 500 * time.Millisecond
	// DefaultLockTimeout bounds Locker.Lock, whatever ZooKeeper does.
	DefaultLockTimeout = time.Second
	// DefaultRetryInterval is the Elector's pause after a failed campaign.
	DefaultRetryInterval = 500 * time.Millisecond
)

// LockerOption configures NewLocker.
type LockerOption func(*lockerConfig)

type lockerConfig struct {
	window  time.Duration
	windows map[string]time.Duration
	timeout time.Duration
	acl     []zk.ACL
	observe func(Event)
	spread  bool
	name    string
	err     error
}

func defaultLockerConfig() lockerConfig {
	return lockerConfig{
		window:  DefaultWindow,
		windows: map[string]time.Duration{},
		timeout: DefaultLockTimeout,
		acl:     zk.WorldACL(zk.PermAll),
	}
}

// fail keeps the first error an option meets.
func (c *lockerConfig) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// WithWindow sets the window of every job without its own (WithJobWindow):
// a run is skipped when a run of its job started less than d ago by the
// ZooKeeper server's clock. d must exceed the spread of the fleet's timers
// for one tick (plus Lock's latency) and stay below the job's period minus
// that spread. Default: DefaultWindow.
func WithWindow(d time.Duration) LockerOption {
	return func(c *lockerConfig) {
		if d <= 0 {
			c.fail(fmt.Errorf("%w: window %v", ErrInvalidOption, d))
			return
		}
		c.window = d
	}
}

// WithJobWindow sets the window of the job named job (gocron's job name,
// the key Lock receives), overriding WithWindow for it.
func WithJobWindow(job string, d time.Duration) LockerOption {
	return func(c *lockerConfig) {
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

// WithLockTimeout bounds how long Lock may take, whatever ZooKeeper does
// (a stalled server, a lost connection): after d it gives up and the run is
// skipped. It delays gocron's tick at most that long. Default:
// DefaultLockTimeout.
func WithLockTimeout(d time.Duration) LockerOption {
	return func(c *lockerConfig) {
		if d <= 0 {
			c.fail(fmt.Errorf("%w: lock timeout %v", ErrInvalidOption, d))
			return
		}
		c.timeout = d
	}
}

// WithACL sets the ACL of the nodes the Locker creates: its lock nodes and
// the jobs' run nodes. Default: open to all (zk.WorldACL(zk.PermAll)).
func WithACL(acl []zk.ACL) LockerOption {
	return func(c *lockerConfig) {
		if len(acl) == 0 {
			c.fail(fmt.Errorf("%w: empty ACL", ErrInvalidOption))
			return
		}
		c.acl = acl
	}
}

// WithObserver has fn called with every Lock call's outcome and latency,
// on the caller's goroutine (gocron's, for the job) just before Lock
// returns: fn must be quick. lockmetrics.Collector.ObserveJob turns the
// events into Prometheus series.
func WithObserver(fn func(Event)) LockerOption {
	return func(c *lockerConfig) {
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
func WithInstanceName(name string) LockerOption {
	return func(c *lockerConfig) {
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
func WithSpread() LockerOption {
	return func(c *lockerConfig) { c.spread = true }
}

// ElectorOption configures NewElector.
type ElectorOption func(*electorConfig)

type electorConfig struct {
	value    string
	retry    time.Duration
	onChange func(leading bool)
	err      error
}

// WithCandidate sets the value this instance campaigns with, which
// Elector.Leader reports while it leads. Default: host:pid. The candidate's
// node carries it: NewElector refuses one that makes the node's data
// larger than zklock takes (64 KiB, see zklock.WithLabel) with
// ErrInvalidOption.
func WithCandidate(value string) ElectorOption {
	return func(c *electorConfig) { c.value = value }
}

// WithRetryInterval sets the pause after a campaign that failed (other than
// by Close) before the next. Default: DefaultRetryInterval.
func WithRetryInterval(d time.Duration) ElectorOption {
	return func(c *electorConfig) {
		if d <= 0 && c.err == nil {
			c.err = fmt.Errorf("%w: retry interval %v", ErrInvalidOption, d)
			return
		}
		c.retry = d
	}
}

// WithLeaderHandler has fn called with true when this instance starts
// leading and with false when it stops, one call at a time, in order, on a
// goroutine of the Elector's own: a slow fn delays only its own later
// calls (IsLeader, exact at any moment, may be ahead of it). fn may call
// Close, which never waits for fn. After Close has returned, fn is called
// at most once more: with false, when its last call was true.
func WithLeaderHandler(fn func(leading bool)) ElectorOption {
	return func(c *electorConfig) { c.onChange = fn }
}

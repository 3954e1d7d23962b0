package gocronlock

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/runonce"
)

// Defaults of the Locker's and the Elector's options.
const (
	// DefaultWindow is the window of a job without WithWindow or
	// WithJobWindow: right for ticks of 1 s or more whose instances fire
	// within about 400 ms of one another.
	DefaultWindow = runonce.DefaultWindow
	// DefaultLockTimeout bounds Locker.Lock, whatever ZooKeeper does.
	DefaultLockTimeout = runonce.DefaultLockTimeout
	// DefaultRetryInterval is the Elector's pause after a failed campaign.
	DefaultRetryInterval = 500 * time.Millisecond
)

// MaxKeyLen is the longest job name, in bytes, that Locker.Lock accepts.
const MaxKeyLen = runonce.MaxKeyLen

// LockerOption configures NewLocker: a runonce.Option, so that runonce's
// options (runonce.WithLogger, say) configure a Locker too.
type LockerOption = runonce.Option

// WithWindow sets the window of every job without its own (WithJobWindow):
// a run is skipped when a run of its job started less than d ago by the
// ZooKeeper server's clock. d must exceed the spread of the fleet's timers
// for one tick (plus Lock's latency) and stay below the job's period minus
// that spread. Default: DefaultWindow.
func WithWindow(d time.Duration) LockerOption { return runonce.WithWindow(d) }

// WithJobWindow sets the window of the job named job (gocron's job name,
// the key Lock receives), overriding WithWindow for it.
func WithJobWindow(job string, d time.Duration) LockerOption { return runonce.WithJobWindow(job, d) }

// WithLockTimeout bounds how long Lock may take, whatever ZooKeeper does
// (a stalled server, a lost connection): after d it gives up and the run is
// skipped. It delays gocron's tick at most that long. Default:
// DefaultLockTimeout.
func WithLockTimeout(d time.Duration) LockerOption { return runonce.WithLockTimeout(d) }

// WithACL sets the ACL of the nodes the Locker creates: its lock nodes and
// the jobs' run nodes. Default: open to all (zk.WorldACL(zk.PermAll)).
func WithACL(acl []zk.ACL) LockerOption { return runonce.WithACL(acl) }

// WithObserver has fn called with every Lock call's outcome and latency,
// on the caller's goroutine (gocron's, for the job) just before Lock
// returns: fn must be quick. lockmetrics.Collector.ObserveJob turns the
// events into Prometheus series.
func WithObserver(fn func(Event)) LockerOption { return runonce.WithObserver(fn) }

// WithInstanceName names this instance in the run nodes it writes, which
// LastRun and the inspector (tierlock ls) report, and which WithSpread
// tells the instances apart by. Default: host:pid. Each instance of a
// fleet needs a name of its own.
func WithInstanceName(name string) LockerOption { return runonce.WithInstanceName(name) }

// WithSpread spreads the runs of each job over the fleet: an instance that
// made one of the job's last runs steps back from a tick (ErrYielded) for
// the others it has seen alive since (see runonce's package doc), where
// without it the instance whose timer fires first makes every run. It
// never makes a tick run twice (the rule decides as ever); an instance
// that leaves costs a job at most the one tick left to it. Like the
// window, it is one setting for the whole fleet.
func WithSpread() LockerOption { return runonce.WithSpread() }

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

// instanceName is host:pid, the Elector's default candidate.
func instanceName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

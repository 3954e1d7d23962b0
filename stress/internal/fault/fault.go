// Package fault injects faults into a stress run while its workers work,
// one at a time, and tells whether each was recovered from: server faults
// (server.go: restart, leader, partition), faults of one worker's
// connections or process (client.go: expire, drop, kill, reset, stall;
// flood.go: flood; pause.go: pause; reopen.go: close), the schedule and the parent's message loop meanwhile
// (run.go), and the recovery times measured on the checked holds
// (recovery.go).
//
// A fault on a worker is put, where possible, on a process that holds a
// lock: the injector asks the worker to keep its next hold until it is lost
// (proto.Linger) and strikes once it holds.
package fault

import (
	"fmt"
	"strings"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/stress/internal/fleet"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// Kind names a kind of fault.
type Kind string

// The faults -fault can inject.
const (
	Restart Kind = "restart" // SIGKILL a server (standalone, or a follower of an ensemble) and restart it with its data
	Leader  Kind = "leader"  // SIGKILL the ensemble's leader, restart it once another leads
	Expire  Kind = "expire"  // freeze one worker's connections past its session timeout
	Drop    Kind = "drop"    // cut one worker's connections
	Kill    Kind = "kill"    // SIGKILL one worker (preferably holding a lock) and start a replacement
	// Partition cuts a follower (preferably the holder's server) from its
	// peers while its clients stay connected.
	Partition Kind = "partition"
	Reset     Kind = "reset" // TCP resets of one worker's connections, at random moments
	Flood     Kind = "flood" // expire a worker's session while it waits for proto.FloodLocks locks
	Stall     Kind = "stall" // block one worker's writes while the server's bytes flow
	// Pause stops a worker holding a lock (SIGSTOP) past its session
	// timeout, then lets it go on (SIGCONT).
	Pause Kind = "pause"
	// Close has one worker close its locks and make new ones, again and
	// again, while its goroutines acquire them (grants racing Close).
	Close Kind = "close"
)

// All is every kind, in the order -fault all lists them.
var All = []Kind{Restart, Leader, Expire, Drop, Kill, Partition, Reset, Flood, Stall, Pause, Close}

// NeedOwnServers reports whether a kind needs servers that stress started
// (it kills or cuts them).
func (k Kind) NeedOwnServers() bool { return k == Restart || k == Leader || k == Partition }

// Parse expands a -fault value; nil for none. external tells that the
// servers are not stress's own, so restart, leader and partition are
// impossible (and "all" leaves them out).
func Parse(v string, external bool) ([]Kind, error) {
	var out []Kind
	add := func(k Kind) {
		for _, o := range out {
			if o == k {
				return
			}
		}
		out = append(out, k)
	}
	for _, name := range strings.Split(v, ",") {
		switch k := Kind(strings.TrimSpace(name)); k {
		case "none", "":
		case "all":
			for _, k := range All {
				if !external || !k.NeedOwnServers() {
					add(k)
				}
			}
		case Restart, Leader, Partition:
			if external {
				return nil, fmt.Errorf("-fault %s needs a ZooKeeper started by stress: it cannot kill servers given by -zk or $%s",
					k, zkserver.EnvServers)
			}
			add(k)
		case Expire, Drop, Kill, Reset, Flood, Stall, Pause, Close:
			add(k)
		default:
			return nil, fmt.Errorf("-fault: unknown fault %q (want none, restart, leader, expire, drop, kill, partition, reset, flood, stall, pause, close or all)", k)
		}
	}
	return out, nil
}

// RecoveryBound is how long, beyond the session timeout, the workers a
// fault hit may take to acquire again once the fault was healed. A fault
// not recovered from within that time fails the run.
const RecoveryBound = 15 * time.Second

// Settings are what the flags say about a run with faults.
type Settings struct {
	Kinds          []Kind        // picked in shuffled rounds
	Every          time.Duration // mean time between faults
	Seed           int64         // of the schedule: every implementation of a run gets the same one
	Procs          int           // worker slots
	Duration       time.Duration // the nominal length of the run
	Timeout        time.Duration // give up on the run after this long
	SessionTimeout time.Duration
	ConnectTimeout time.Duration
}

// Target is what the faults hit.
type Target struct {
	Cluster *zkserver.Cluster
	// Proxies are the workers' fault proxies, by worker slot and server.
	Proxies [][]*faultproxy.Proxy
	Fleet   *fleet.Fleet
	// NewTask describes worker proc in slot, for a replacement.
	NewTask func(proc, slot int) proto.Task
	// Fence is the run's fenced store (nil: none), which the pause fault
	// watches for a later holder's write while the holder is stopped.
	Fence interface{ High(path int32) int64 }
}

// Outcome is what the faults did to a run.
type Outcome struct {
	Events []*Event
	// Killed maps the processes killed by a fault to when they were known
	// dead (shared clock): exclusion.Options.Killed.
	Killed map[int32]int64
	// CountersOff: a server restarted, so its request counters started
	// again.
	CountersOff bool
	// Losses and Expiries are what killed workers reported last: holds
	// ended by a loss, and session expiries (they send no result).
	Losses, Expiries int64
	// Paused maps the processes stopped by the pause fault to their
	// pauses: exclusion.Options.Paused.
	Paused map[int32][]exclusion.Pause
}

// Event is one injected fault: the fault log's line.
type Event struct {
	Impl    string `json:"impl"`
	N       int    `json:"n"`
	Kind    Kind   `json:"kind"`
	Variant string `json:"variant"`
	Target  string `json:"target"`
	// Seconds since the run started.
	AtSec float64 `json:"at_s"`
	// The rest are seconds since the fault started. Healed: the healing
	// action was done (server restarted, connections released, replacement
	// worker started; 0 for a drop).
	HealedSec float64 `json:"healed_s"`
	// Next acquisition by any worker; -1: none.
	RecoveryAnySec float64 `json:"recovery_any_s"`
	// The affected worker's next acquisition after the fault was healed (for
	// a server fault: the last of the workers; for leader: after a new
	// leader was elected; for kill: the replacement's first); -1: none.
	RecoveryOwnSec float64 `json:"recovery_affected_s"`
	Recovered      bool    `json:"recovered"`
	// A fault put on a worker while it held a lock: when the holder saw
	// its hold lost, and why.
	HolderLossSec *float64 `json:"holder_saw_loss_s,omitempty"`
	HolderCause   string   `json:"holder_loss_cause,omitempty"`
	// expire, pause: whether the worker's session did expire.
	SessionExpired *bool `json:"session_expired,omitempty"`
	// pause: the token a later holder of the paused holder's path had
	// written to the fenced store when the holder was let go on (0: none
	// did); how long after waking the holder saw its loss; how the writes
	// it made on waking ended (proto.WakeReport).
	LaterToken       int64    `json:"later_token,omitempty"`
	LossAfterWakeSec *float64 `json:"loss_after_wake_s,omitempty"`
	WakeGuarded      string   `json:"wake_guarded_write,omitempty"`
	WakeFence        string   `json:"wake_fenced_write,omitempty"`
	Note             string   `json:"note,omitempty"`
	Failure          string   `json:"failure,omitempty"`

	start, healed, ref int64 // shared clock; recovery of the affected workers counts from ref
	affected           []int // processes
	target             int   // expire, pause: the worker process frozen or stopped
	expiredBefore      int64 // expire, pause: its session expiries before
}

// Injected reports whether the fault was injected (it may have failed
// before).
func (ev *Event) Injected() bool { return ev.start != 0 }

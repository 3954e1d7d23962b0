// Package proto is the protocol between the stress command and its worker
// processes, which both sides import and nothing else: the worker's task,
// the commands the parent writes on a worker's stdin, the messages a worker
// writes on its stdout (one JSON object a line), its result, and the names
// of the lock implementations.
//
// A run goes: the parent starts a worker (internal/child, role [Role]) with
// its [Task]; the worker connects, makes its locks and says [Ready]; the
// parent says [Go] with the run's start ([GoAt]), from which every worker
// knows the measured window (after [Task.Warmup]); the worker sends [Progress] every 200ms and [Done] when
// its run is over; the parent says [Exit]; the worker answers [ResultMsg]
// and exits. [Stop] ends a run early. Fault injection adds [Linger] /
// [Unlinger] (answered by [Holding] and [Lingered]; [LingerPause] for a
// holder about to be stopped with SIGSTOP) and [Flood] / [Unflood]
// (answered by [Flooding] and [Flooded]).
package proto

import (
	"fmt"
	"time"
)

// Role is the role of a stress worker process (see internal/child).
const Role = "stress-worker"

// Impl names a lock implementation.
type Impl string

// The lock implementations.
const (
	Tier        Impl = "tier"         // tier.Lock, strict release order
	TierHandoff Impl = "tier-handoff" // tier.Lock with bounded local hand-off
	Zklock      Impl = "zklock"       // zklock.Lock behind a sync.Mutex
	Gozk        Impl = "gozk"         // go-zookeeper zk.Lock per goroutine
	Nolock      Impl = "nolock"       // no lock at all: proves the checker can fail
	Zkcompat    Impl = "zkcompat"     // tierlock's drop-in for zk.Lock, one handle per goroutine
	Curator     Impl = "curator"      // Apache Curator's InterProcessMutex (Java), one per thread
	Kazoo       Impl = "kazoo"        // kazoo's Lock (Python) with extra_lock_patterns=("-lock-",), one per thread
	Redsync     Impl = "redsync"      // go-redsync/redsync v4 Mutex per goroutine and key on one in-memory redis-server
	// Mix names a run whose workers use different implementations on the
	// same paths (-mix); no worker runs it.
	Mix Impl = "mix"
	// FakeDrain and FakeAbandon are test doubles of the two ways a lock
	// ends a timed run, for the tests of how runs are counted (the flags
	// refuse them): both grant one path at the same pace with one real
	// ZooKeeper request per acquisition; at the end FakeDrain's waits
	// cannot be abandoned (as zk.Lock's) and are granted after the
	// deadline, while FakeAbandon gives its waits up at some cost in time
	// and requests (as tier deletes its queued nodes).
	FakeDrain   Impl = "fake-drain"
	FakeAbandon Impl = "fake-abandon"
)

// Recipe names what the workers take: a mutex, a read/write lock or a
// semaphore.
type Recipe string

// The recipes.
const (
	Mutex     Recipe = "mutex"     // a lock: every hold exclusive
	RW        Recipe = "rw"        // a read/write lock: each hold a read or a write
	Semaphore Recipe = "semaphore" // a semaphore of Leases leases: each hold Permits permits
	Multi     Recipe = "multi"     // a tier.MultiLock: each hold Members mutexes at once
)

// RecipeImpls are the implementations of the read/write lock and the
// semaphore recipes, in the order they run ("all": the first two).
var RecipeImpls = []Impl{Tier, Curator, Nolock}

// MixImpls are the implementations a mixed run can be made of.
var MixImpls = []Impl{Tier, TierHandoff, Zklock, Gozk, Zkcompat, Curator, Kazoo}

// Task is everything a worker process needs to know.
type Task struct {
	Impl       Impl          `json:"impl"`
	Proc       int           `json:"proc"`
	Goroutines int           `json:"goroutines"`
	Procs      int           `json:"procs"`
	PathBase   string        `json:"path_base"` // lock paths are PathBase/lock-<i>
	NPaths     int           `json:"npaths"`
	Duration   time.Duration `json:"duration"`
	// Warmup comes before the measured window of a timed run: the run
	// lasts Warmup + Duration, and the worker measures itself over the
	// last Duration (see Window).
	Warmup         time.Duration `json:"warmup,omitempty"`
	Acquisitions   int64         `json:"acquisitions,omitempty"` // in all; 0: run for Duration
	Hold           time.Duration `json:"hold"`
	HoldMode       string        `json:"hold_mode"`
	Pick           string        `json:"pick"`
	HandoffMax     int           `json:"handoff_max"`
	HandoffMaxHold time.Duration `json:"handoff_max_hold"`
	Servers        []string      `json:"servers"`
	// Redis is the host:port of the redis-server the parent started for
	// the redsync runs ("" for the other implementations): the lock
	// paths are its keys.
	Redis          string        `json:"redis,omitempty"`
	SessionTimeout time.Duration `json:"session_timeout"`
	ConnectTimeout time.Duration `json:"connect_timeout"`
	RecordFile     string        `json:"record_file"`
	RecordCap      int64         `json:"record_cap"`
	Seed           uint64        `json:"seed"`
	Verbose        bool          `json:"verbose"`
	// Faults is set in runs with fault injection: a hold that ends by a
	// loss (its Release reports zklock.ErrLockLost) is then expected and
	// counted, not an error.
	Faults bool `json:"faults,omitempty"`
	Slot   int  `json:"slot"` // the place among the P workers; a replacement takes its killed predecessor's
	// Metrics, when set, is the host:port where the worker serves its
	// locks' Prometheus metrics (package lockmetrics) while it runs.
	Metrics string `json:"metrics,omitempty"`
	// Fence, when set, is the Unix socket of the parent's fenced store
	// (stress/internal/writes): every exclusive hold writes to it with its
	// token. Guard, when set, is where the guarded nodes are
	// (Guard/lock-<i> for path i): every exclusive hold of an
	// implementation with guarded transactions writes to its path's node
	// through the lock. Runs with faults only.
	Fence string `json:"fence,omitempty"`
	Guard string `json:"guard,omitempty"`

	// Recipe is what the goroutines take ("": Mutex). With RW, each hold
	// is a read with probability Readers, else a write; with Semaphore,
	// each takes Permits of the Leases leases of its path.
	Recipe  Recipe  `json:"recipe,omitempty"`
	Readers float64 `json:"readers,omitempty"`
	Leases  int     `json:"leases,omitempty"`
	Permits int     `json:"permits,omitempty"`
	// Members is the number of locks of a Multi hold.
	Members int `json:"members,omitempty"`

	// Derived by the worker, so that the task stays small in the
	// environment whatever the numbers of paths and goroutines.
	Paths []string `json:"-"`
	Quota []int64  `json:"-"` // acquisitions per goroutine; nil: run for Duration
}

// Derive fills in the fields computed from the others.
func (t *Task) Derive() {
	t.Paths = LockPaths(t.PathBase, t.NPaths)
	if t.Acquisitions > 0 {
		t.Quota = SplitQuota(t.Acquisitions, t.Procs, t.Goroutines)[t.Proc]
	}
}

// LockPaths names the n lock paths of a run below base.
func LockPaths(base string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s/lock-%d", base, i)
	}
	return out
}

// SplitQuota spreads total acquisitions over procs x goroutines.
func SplitQuota(total int64, procs, goroutines int) [][]int64 {
	n := int64(procs * goroutines)
	out := make([][]int64, procs)
	for p := range out {
		out[p] = make([]int64, goroutines)
		for g := range out[p] {
			i := int64(p*goroutines + g)
			out[p][g] = total / n
			if i < total%n {
				out[p][g]++
			}
		}
	}
	return out
}

// Command is what the parent writes on a worker's stdin, one a line.
type Command string

// The commands.
const (
	Go   Command = "go"   // start acquiring
	Stop Command = "stop" // stop acquiring early
	Exit Command = "exit" // release everything, report and exit
	// Linger asks that the next hold be kept until it is lost (or
	// Unlinger): the worker says Holding when it enters that hold and
	// Lingered when it leaves it. Fault injection uses it to put a fault
	// on a process that certainly holds a lock.
	Linger   Command = "linger"
	Unlinger Command = "unlinger"
	// LingerPause is Linger for a holder that the parent is about to stop
	// (SIGSTOP) past its session timeout: the next exclusive hold (a
	// write, for a read/write lock) lingers, and on waking the holder
	// writes at once, through its lock's guarded transaction and to the
	// fenced store, as a holder paused between its check and its write
	// would; its Lingered message says how those writes ended (Wake).
	LingerPause Command = "linger-pause"
	// Flood asks for a flood: the worker queues FloodLocks waiters on
	// locks its own session holds and says Flooding; the parent then
	// expires the session; Unflood makes the worker let the holders go,
	// wait for every waiter to end and say Flooded with a FloodReport.
	Flood   Command = "flood"
	Unflood Command = "unflood"
	// CloseLocks asks for the close fault: the worker closes its locks
	// and makes new ones on the same paths, CloseRounds times, while its
	// goroutines acquire them, and says Reopened with how many rounds it
	// made (N; 0 when its implementation cannot: then Err says why).
	CloseLocks Command = "close-locks"
)

// CloseRounds is how many times the close fault closes a worker's locks,
// CloseEvery apart on average.
const (
	CloseRounds = 20
	CloseEvery  = 20 * time.Millisecond
)

// MsgType is the type of a worker's message.
type MsgType string

// The message types.
const (
	Ready     MsgType = "ready"    // connected, locks made: waiting for Go
	Progress  MsgType = "progress" // every 200ms while running
	Done      MsgType = "done"     // the run is over: waiting for Exit
	ResultMsg MsgType = "result"   // the worker's result, then it exits
	Error     MsgType = "error"    // the worker gives up
	Holding   MsgType = "holding"  // the lingering hold was entered
	Lingered  MsgType = "lingered" // the lingering hold was left
	Flooding  MsgType = "flooding" // the flood's waiters are queued
	Flooded   MsgType = "flooded"  // the flood's waiters ended
	Reopened  MsgType = "reopened" // the close fault's rounds are done
)

// Message is one line a worker writes on its stdout for the parent.
type Message struct {
	Type   MsgType `json:"type"`
	N      int64   `json:"n,omitempty"`   // Progress, Done: acquisitions so far; Flooding: waiters queued
	Err    string  `json:"err,omitempty"` // Error: why the worker gives up
	Result *Result `json:"result,omitempty"`
	// Progress: enter time (shared clock) of the latest acquisition, how
	// many times the worker's ZooKeeper session expired so far, and how
	// many of its holds were lost.
	Last    int64 `json:"last,omitempty"`
	Expired int64 `json:"expired,omitempty"`
	Losses  int64 `json:"losses,omitempty"` // holds that ended by a loss so far
	// Holding, Lingered: the hold kept on request of Linger.
	At    int64  `json:"at,omitempty"` // shared clock: when it was entered / left
	G     int32  `json:"g,omitempty"`
	Path  int32  `json:"path,omitempty"`
	Token int64  `json:"token,omitempty"`
	Cause string `json:"cause,omitempty"` // Lingered: why the hold was lost; "" if it was not
	// Lingered after LingerPause: what the holder did on waking.
	Wake *WakeReport `json:"wake,omitempty"`
	// Flooded: how the flood's waiters ended.
	Flood *FloodReport `json:"flood,omitempty"`
}

// Result is what a worker reports after its run.
type Result struct {
	PerGoroutine []int64  `json:"per_goroutine"` // acquisitions by goroutine
	Errors       int64    `json:"errors"`        // failed acquisitions and releases
	ErrorSamples []string `json:"error_samples,omitempty"`
	Records      int64    `json:"records"`
	TokenKind    string   `json:"token_kind"`
	Overflow     bool     `json:"overflow,omitempty"` // the record file filled up
	Losses       int64    `json:"losses,omitempty"`   // holds that ended by a loss (fault runs)
	Disconnects  int64    `json:"disconnects,omitempty"`
	Expiries     int64    `json:"expiries,omitempty"` // ZooKeeper sessions that expired
	// Abandoned counts acquisitions begun and given up when the run ended
	// (their wait was cancelled): work done for no grant.
	Abandoned int64 `json:"abandoned,omitempty"`
	// Window is what the worker measured of itself over the measured
	// window.
	Window *Window `json:"window,omitempty"`
	// Writes counts how the holds' writes to the guarded resources ended
	// (runs with faults).
	Writes *WriteCounts `json:"writes,omitempty"`
}

// WriteCounts counts how the writes of a worker's holds ended: through the
// lock's guarded transaction (applied; refused by the server because the
// hold's node was gone; refused by the lock, which knew the hold lost;
// outcome unknown; another error) and to the fenced store (admitted;
// refused as stale; the store not reached). Holds that were not written
// for (reads, semaphores) are not counted.
type WriteCounts struct {
	GuardedApplied int64    `json:"guarded_applied"`
	GuardedStale   int64    `json:"guarded_refused_by_server"`
	GuardedLost    int64    `json:"guarded_refused_loss_known"`
	GuardedUnknown int64    `json:"guarded_outcome_unknown"`
	GuardedOther   int64    `json:"guarded_other_errors"`
	FenceAdmitted  int64    `json:"fence_admitted"`
	FenceRefused   int64    `json:"fence_refused"`
	FenceErrors    int64    `json:"fence_errors"`
	Samples        []string `json:"samples,omitempty"` // of the other errors
}

// Add adds o to c.
func (c *WriteCounts) Add(o *WriteCounts) {
	if o == nil {
		return
	}
	c.GuardedApplied += o.GuardedApplied
	c.GuardedStale += o.GuardedStale
	c.GuardedLost += o.GuardedLost
	c.GuardedUnknown += o.GuardedUnknown
	c.GuardedOther += o.GuardedOther
	c.FenceAdmitted += o.FenceAdmitted
	c.FenceRefused += o.FenceRefused
	c.FenceErrors += o.FenceErrors
	if len(c.Samples) < 5 {
		c.Samples = append(c.Samples, o.Samples[:min(len(o.Samples), 5-len(c.Samples))]...)
	}
}

// WakeReport is what a holder stopped past its session did on waking: when
// it noticed it had been stopped (shared clock), and how its writes made
// right then ended. Guarded is "applied", "refused by the server" (the
// hold's node was gone), "refused by the lock" (it knew the hold lost),
// "unknown" or "error", with Err; "" when the implementation has none.
// Fence is "admitted", "refused" (with High, the token that stopped it) or
// "error"; "" without a fenced store.
type WakeReport struct {
	At         int64  `json:"at"`
	Guarded    string `json:"guarded,omitempty"`
	GuardedAt  int64  `json:"guarded_at,omitempty"`
	GuardedErr string `json:"guarded_err,omitempty"`
	Fence      string `json:"fence,omitempty"`
	FenceAt    int64  `json:"fence_at,omitempty"`
	FenceHigh  int64  `json:"fence_high,omitempty"`
	FenceErr   string `json:"fence_err,omitempty"`
}

// FloodLocks is how many locks a flooded worker waits for at once: one
// watch each, so that the expiry of its session makes go-zookeeper send as
// many events in a burst.
const FloodLocks = 200

// FloodReport is how the waiters of a flood ended.
type FloodReport struct {
	Waiters int `json:"waiters"`
	Queued  int `json:"queued"` // queued before the expiry
	Granted int `json:"granted"`
	Failed  int `json:"failed"`
	// Stuck waiters had not returned within the bound after their holders
	// let go.
	Stuck int `json:"stuck"`
	// LostAtOnce counts grants (a waiter's, or a fresh lock's afterwards)
	// whose held context was already cancelled when Acquire returned.
	LostAtOnce int    `json:"lost_at_once"`
	Err        string `json:"err,omitempty"`
	ErrSample  string `json:"err_sample,omitempty"`
}

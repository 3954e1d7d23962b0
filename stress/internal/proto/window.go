package proto

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DeadlineGrace separates the end of a timed run's measured window from
// its deadline, when the workers stop and abandon their waits: the
// counters read at the window's edge (by the parent and each worker, on
// their own timers) do not race the requests of the abandonment.
const DeadlineGrace = 100 * time.Millisecond

// GoAt is the Go command with the moment the run starts on the shared
// clock (internal/exclusion.Now): every worker measures the same window,
// [t0 + Task.Warmup, t0 + Task.Warmup + Task.Duration], whenever the
// command reaches it.
func GoAt(t0 int64) Command { return Command(fmt.Sprintf("%s %d", Go, t0)) }

// GoTime tells whether c is a Go command and, if it carries one, the
// run's start t0 (0: none; a replacement worker started by a fault gets a
// bare Go and starts from its own clock).
func (c Command) GoTime() (t0 int64, ok bool) {
	word, arg, _ := strings.Cut(string(c), " ")
	if Command(word) != Go {
		return 0, false
	}
	if arg == "" {
		return 0, true
	}
	t0, err := strconv.ParseInt(arg, 10, 64)
	return t0, err == nil
}

// Window is what a worker measured of itself over the run's measured
// window: its ZooKeeper requests by opcode, its processor time, its
// goroutines, its session's lease and its negotiated session timeout.
type Window struct {
	Start int64 `json:"start"` // shared clock
	End   int64 `json:"end"`   // the window's end, or when the run ended if sooner
	// Ops are the requests the worker wrote inside the window; Counted is
	// false when its connections are not its own (the -mix peers Curator
	// and kazoo, nolock).
	Ops     OpCounts `json:"ops"`
	Counted bool     `json:"counted"`
	// CPUNs is the worker process's user + system time inside the window
	// (getrusage RUSAGE_SELF; a peer's own process is not included).
	CPUNs int64 `json:"cpu_ns"`
	// PeakGoroutines is the most goroutines of the worker process seen
	// (sampled every 100ms) inside the window.
	PeakGoroutines int `json:"peak_goroutines"`
	// Lease: for an implementation on a zklock.Session, the grants that
	// waited on the lease and its lapses inside the window.
	Lease       bool  `json:"lease"`
	LeaseWaits  int64 `json:"lease_waits"`
	LeaseLapses int64 `json:"lease_lapses"`
	// TimeoutMs is the session timeout the server granted (read from its
	// connect response); 0: unknown.
	TimeoutMs int64 `json:"session_timeout_ms"`
}

// OpCounts counts ZooKeeper requests by kind: create (create, create2,
// createContainer, createTTL), delete (delete, deleteContainer),
// getChildren (getChildren, getChildren2, and multiRead: tierlock's
// listings of many paths in one request, reads), multi (writes),
// setWatches (setWatches, setWatches2, re-arming watches on a new
// connection) and the rest as ZooKeeper names them.
type OpCounts struct {
	Create      int64 `json:"create"`
	Multi       int64 `json:"multi"`
	Delete      int64 `json:"delete"`
	GetChildren int64 `json:"get_children"`
	GetData     int64 `json:"get_data"`
	Exists      int64 `json:"exists"`
	Sync        int64 `json:"sync"`
	SetData     int64 `json:"set_data"`
	Ping        int64 `json:"ping"`
	SetWatches  int64 `json:"set_watches"`
	Other       int64 `json:"other"`
}

// OpNames are the kinds of OpCounts in the order of Values: the columns of
// a table.
var OpNames = []string{"create", "multi", "delete", "getChildren", "getData", "exists", "sync", "setData", "ping", "setWatches", "other"}

// Values are the counts in the order of OpNames.
func (o OpCounts) Values() []int64 {
	return []int64{o.Create, o.Multi, o.Delete, o.GetChildren, o.GetData, o.Exists, o.Sync, o.SetData, o.Ping, o.SetWatches, o.Other}
}

// Total is every request counted, pings included.
func (o OpCounts) Total() int64 {
	var n int64
	for _, v := range o.Values() {
		n += v
	}
	return n
}

// Add returns o + p.
func (o OpCounts) Add(p OpCounts) OpCounts { return o.zip(p, 1) }

// Sub returns o - p.
func (o OpCounts) Sub(p OpCounts) OpCounts { return o.zip(p, -1) }

func (o OpCounts) zip(p OpCounts, sign int64) OpCounts {
	a, b := o.Values(), p.Values()
	for i := range a {
		a[i] += sign * b[i]
	}
	return OpCounts{a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]}
}

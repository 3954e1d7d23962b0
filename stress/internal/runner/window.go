package runner

import (
	"context"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/sample"
)

// Window is how a run was counted. Every implementation is measured over
// the same window of a timed run: from the end of the warm-up to the
// deadline, [Start, End] on the shared clock. Only holds entered inside it
// count as acquisitions; the servers' counters and processor time are read
// at its edges, on timers, and each worker reads its own (requests by
// opcode, CPU, goroutines, lease) at the same moments. What happens after
// the deadline, a baseline that drains its queued waiters (zk.Lock cannot
// abandon a wait) or an implementation that abandons them, is reported
// apart, charged to nobody.
//
// A run with faults or with a quota (-acquisitions) has no warm-up and is
// measured whole, from the start to its end (Whole).
type Window struct {
	Start int64 `json:"start"` // shared clock
	End   int64 `json:"end"`
	Whole bool  `json:"whole,omitempty"`
	// Complete holds entered in the warm-up, inside the window (the
	// acquisitions counted) and after it (granted after the deadline).
	Before int64 `json:"holds_in_warmup"`
	In     int64 `json:"holds_in_window"`
	After  int64 `json:"holds_after_window"`
	// Abandoned counts acquisitions begun and given up when the run ended.
	Abandoned int64 `json:"abandoned"`
	// Requests the servers received inside the window, stress's own
	// subtracted (-1: unknown: a server restarted, or did not answer).
	Requests int64 `json:"requests"`
	// ServerCPU is the servers' processor time inside the window (-1:
	// unknown, for servers stress did not start).
	ServerCPU time.Duration `json:"server_cpu_ns"`
	// Host is how this machine's processors were spent between the
	// servers' readings (nil: unknown, no /proc/stat).
	Host *HostCPU `json:"host_cpu,omitempty"`
	// Workers is what each worker measured of itself, by process (nil: it
	// sent no result).
	Workers []*proto.Window `json:"-"`
	// Counters are read on timers, which a loaded machine fires late: each
	// count is divided by the grants of the interval it was really read
	// over. ServerFrom and ServerTo are when the servers' counters were
	// read (shared clock), ServerGrants the complete holds entered between,
	// and WorkerGrants, by process, those of the process entered between
	// its own readings (Workers[p].Start and End).
	ServerFrom   int64   `json:"server_read_from"`
	ServerTo     int64   `json:"server_read_to"`
	ServerGrants int64   `json:"server_interval_holds"`
	WorkerGrants []int64 `json:"-"`
}

// Seconds is the window's length.
func (w Window) Seconds() float64 { return float64(w.End-w.Start) / 1e9 }

// Contains reports whether t lies inside the window.
func (w Window) Contains(t int64) bool { return t >= w.Start && t <= w.End }

// edge is what the parent reads at an edge of the window.
type edge struct {
	at       int64 // shared clock, when the reading began
	counters zkserver.Counters
	commands int64 // a redsync run's: the redis-server's commands processed
	ok       bool  // counters read
	cpu      time.Duration
	cpuOK    bool
	host     cpuTimes // this machine's processors
	hostOK   bool
	sampler  int64
}

// edges reads the servers at the window's edges: ZooKeeper's, or for a
// redsync run the redis-server (redis set).
type edges struct {
	cluster  *zkserver.Cluster
	redis    *redisReader
	smp      *sample.Sampler
	from, to edge
	stop     chan struct{}
	done     chan struct{}
}

// read takes the servers' counters and CPU now.
func (e *edges) read() edge {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g := edge{at: exclusion.Now()}
	if e.redis != nil {
		g.commands, g.ok, g.cpu, g.cpuOK = e.redis.read(ctx)
	} else {
		var err error
		g.counters, err = e.cluster.Counters(ctx)
		g.ok = err == nil
		if !e.cluster.External() {
			g.cpu, err = e.cluster.TotalCPU()
			g.cpuOK = err == nil
		}
	}
	if e.smp != nil {
		g.sampler = e.smp.Requests()
	}
	g.host, g.hostOK = readCPUTimes()
	return g
}

// watch reads the edges at start and end on the shared clock, or at the
// end of the run (finish) if it comes first.
func (e *edges) watch(start, end int64) {
	e.stop, e.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(e.done)
		if !sleepUntil(start, e.stop) {
			e.from = e.read()
			e.to = e.from
			return
		}
		e.from = e.read()
		sleepUntil(end, e.stop)
		e.to = e.read()
	}()
}

// finish waits for the readings (taking the end one now if the run ended
// first).
func (e *edges) finish() {
	close(e.stop)
	<-e.done
}

// sleepUntil sleeps until the shared clock reads t; false if stop closed
// first.
func sleepUntil(t int64, stop <-chan struct{}) bool {
	d := time.Duration(t - exclusion.Now())
	if d <= 0 {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-stop:
		return false
	}
}

// requests are the requests the servers received between the readings,
// less stress's own: the sampler's requests and four-letter words, and
// the closing mntr (a server counts it before answering); -1 if unknown.
// A redis-server's are the commands it ran (total_commands_processed:
// its scripts' own commands included, the GET and DEL of redsync's unlock
// script), less the opening INFO (Redis counts a command once it has run
// it: each INFO is in the next reading, not in its own).
func (e *edges) requests(members int) int64 {
	switch {
	case !e.from.ok || !e.to.ok:
		return -1
	case e.redis != nil:
		return e.to.commands - e.from.commands - 1
	}
	return e.to.counters.PacketsReceived - e.from.counters.PacketsReceived - (e.to.sampler - e.from.sampler) - int64(members)
}

// host is how the machine's processors were spent between the readings;
// nil if unknown.
func (e *edges) host() *HostCPU {
	if !e.from.hostOK || !e.to.hostOK {
		return nil
	}
	return hostBetween(e.from.host, e.to.host)
}

// serverCPU is the servers' processor time between the readings; -1 if
// unknown.
func (e *edges) serverCPU() time.Duration {
	if !e.from.cpuOK || !e.to.cpuOK {
		return -1
	}
	return e.to.cpu - e.from.cpu
}

package results

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

// Cost is what an implementation's acquisitions cost inside the measured
// window, and what it did around it.
type Cost struct {
	// The window: its length and whether it is the whole run (faults,
	// -acquisitions), the complete holds entered in the warm-up before it
	// and after its end (most granted after the deadline: a drain), and the
	// acquisitions begun and given up at the deadline.
	WindowSec   float64 `json:"window_s"`
	Whole       bool    `json:"whole_run,omitempty"`
	HoldsWarmup int64   `json:"holds_in_warmup"`
	HoldsAfter  int64   `json:"holds_after_window"`
	Abandoned   int64   `json:"abandoned_at_deadline"`
	// Processor time per acquisition, in µs: the workers' own (getrusage)
	// and the servers' (/proc, servers stress started); -1: unknown.
	ClientCPUPerAcqUS float64 `json:"client_cpu_per_acquisition_us"`
	ServerCPUPerAcqUS float64 `json:"server_cpu_per_acquisition_us"`
	// PeakGoroutines is the most goroutines seen in one worker process
	// (-1: unknown).
	PeakGoroutines int `json:"peak_goroutines_per_process"`
	// ClientOps are the requests the workers wrote inside the window, by
	// kind, and ClientOpsPerAcq the same per acquisition (nil: not counted,
	// the -mix peers and nolock).
	ClientOps       *proto.OpCounts    `json:"client_requests,omitempty"`
	ClientOpsPerAcq map[string]float64 `json:"client_requests_per_acquisition,omitempty"`
	ClientReqPerAcq float64            `json:"client_requests_per_acquisition_total"`
	// Lease (implementations on a zklock.Session): grants that waited on
	// the lease, and lapses that ended holds, inside the window.
	Lease       bool  `json:"lease"`
	LeaseWaits  int64 `json:"lease_waits,omitempty"`
	LeaseLapses int64 `json:"lease_lapses,omitempty"`
	// The session timeout the servers granted the workers, in ms (the
	// least and the most; 0: unknown).
	TimeoutMinMs int64 `json:"negotiated_session_timeout_min_ms"`
	TimeoutMaxMs int64 `json:"negotiated_session_timeout_max_ms"`
	// Host is how this machine's processors were spent inside the window:
	// busy, and stolen by a hypervisor (nil: unknown).
	Host *runner.HostCPU `json:"host_cpu,omitempty"`
	// The physical limits measured before the run (nil: not measured), and
	// the throughput as a fraction of each.
	Limits  *runner.Limits `json:"limits,omitempty"`
	OfChain float64        `json:"throughput_of_chain,omitempty"`
	OfPairs float64        `json:"throughput_of_pairs,omitempty"`
}

// costOf computes the cost figures of run. Each count is divided by the
// grants of the interval it was really read over (a timer fires late on a
// loaded machine): the servers' by those between the parent's readings,
// each worker's by its own between its readings.
func costOf(run *runner.Run, perSec float64) Cost {
	w := run.Window
	c := Cost{
		WindowSec: w.Seconds(), Whole: w.Whole, HoldsWarmup: w.Before, HoldsAfter: w.After, Abandoned: w.Abandoned,
		ClientCPUPerAcqUS: -1, ServerCPUPerAcqUS: -1, PeakGoroutines: -1, Limits: run.Limits, Host: w.Host,
	}
	if w.ServerCPU >= 0 {
		c.ServerCPUPerAcqUS = per(float64(w.ServerCPU)/1e3, w.ServerGrants)
	}
	t := c.addWorkers(w.Workers, w.WorkerGrants)
	if t.reported > 0 && t.reported == len(w.Workers) {
		c.ClientCPUPerAcqUS = per(float64(t.cpu)/1e3, t.cpuGrants)
	}
	if t.counted {
		c.ClientOps = &t.ops
		c.ClientReqPerAcq = per(float64(t.ops.Total()), t.opsGrants)
		c.ClientOpsPerAcq = map[string]float64{}
		for i, v := range t.ops.Values() {
			c.ClientOpsPerAcq[proto.OpNames[i]] = per(float64(v), t.opsGrants)
		}
	}
	if l := run.Limits; l != nil && l.Err == "" {
		if l.Chains > 0 {
			c.OfChain = perSec / l.Chains
		}
		if l.Pairs > 0 {
			c.OfPairs = perSec / l.Pairs
		}
	}
	return c
}

// per is v per grant; -1 without a grant.
func per(v float64, grants int64) float64 {
	if grants <= 0 {
		return -1
	}
	return v / float64(grants)
}

// workerTotals are the workers' own counts added up, with the grants of
// the intervals they were read over.
type workerTotals struct {
	cpu, cpuGrants int64
	ops            proto.OpCounts
	opsGrants      int64
	counted        bool // some worker counted its requests
	reported       int  // workers that sent their window
}

// addWorkers adds up what the workers measured of themselves (ws, by
// process; grants, the process's grants between its readings); it keeps
// the peak of goroutines, the lease's counts and the range of the timeouts
// granted in c.
func (c *Cost) addWorkers(ws []*proto.Window, grants []int64) (t workerTotals) {
	for p, pw := range ws {
		if pw == nil {
			continue
		}
		t.reported++
		t.cpu += pw.CPUNs
		t.cpuGrants += grants[p]
		c.PeakGoroutines = max(c.PeakGoroutines, pw.PeakGoroutines)
		if pw.Counted {
			t.counted = true
			t.ops = t.ops.Add(pw.Ops)
			t.opsGrants += grants[p]
		}
		if pw.Lease {
			c.Lease = true
			c.LeaseWaits += pw.LeaseWaits
			c.LeaseLapses += pw.LeaseLapses
		}
		if pw.TimeoutMs > 0 {
			if c.TimeoutMinMs == 0 || pw.TimeoutMs < c.TimeoutMinMs {
				c.TimeoutMinMs = pw.TimeoutMs
			}
			c.TimeoutMaxMs = max(c.TimeoutMaxMs, pw.TimeoutMs)
		}
	}
	return t
}

// costHeader and costRows give the table of what an acquisition cost
// inside the window, printed after the comparison and shown in the report.
func costHeader() []string {
	h := []string{"impl", "window", "warm-up holds", "after window", "abandoned", "client CPU/acq", "server CPU/acq",
		"peak gor/proc", "req/acq (server)", "req/acq (client)"}
	h = append(h, opColumns...)
	return append(h, "lease waits", "lease lapses", "session timeout", "machine busy/steal")
}

// opColumns are the request kinds shown per acquisition; the rest (ping,
// setData, setWatches, other) add up in "other".
var opColumns = []string{"create", "multi", "delete", "getChildren", "getData", "exists", "sync", "other"}

func costRows(results []Impl) [][]string {
	var rows [][]string
	for _, r := range results {
		c := r.Cost
		window := fmt.Sprintf("%.1fs", c.WindowSec)
		if c.Whole {
			window += " (whole run)"
		}
		row := []string{string(r.Impl), window, fmt.Sprint(c.HoldsWarmup), fmt.Sprint(c.HoldsAfter), fmt.Sprint(c.Abandoned),
			cpuPerAcq(c.ClientCPUPerAcqUS), cpuPerAcq(c.ServerCPUPerAcqUS), orNA(c.PeakGoroutines),
			reqPerAcq(r.RequestsPerAcq), "n/a"}
		if c.ClientOps != nil {
			row[len(row)-1] = reqPerAcq(c.ClientReqPerAcq)
		}
		for _, n := range opColumns {
			row = append(row, opPerAcq(c, n))
		}
		waits, lapses := "-", "-"
		if c.Lease {
			waits, lapses = fmt.Sprint(c.LeaseWaits), fmt.Sprint(c.LeaseLapses)
		}
		rows = append(rows, append(row, waits, lapses, timeoutText(c), HostText(c.Host)))
	}
	return rows
}

func opPerAcq(c Cost, name string) string {
	if c.ClientOpsPerAcq == nil {
		return "n/a"
	}
	if name != "other" {
		return reqPerAcq(c.ClientOpsPerAcq[name])
	}
	var v float64
	for _, n := range []string{"setData", "ping", "setWatches", "other"} {
		v += c.ClientOpsPerAcq[n]
	}
	return reqPerAcq(v)
}

// cpuPerAcq writes processor time per acquisition (µs), n/a if unknown.
func cpuPerAcq(us float64) string {
	if us < 0 {
		return "n/a"
	}
	return micros(us)
}

// timeoutText is the negotiated session timeout: one value, a range if
// the workers got different ones, n/a if unknown.
func timeoutText(c Cost) string {
	switch {
	case c.TimeoutMinMs <= 0:
		return "n/a"
	case c.TimeoutMinMs == c.TimeoutMaxMs:
		return fmt.Sprintf("%gs", float64(c.TimeoutMinMs)/1e3)
	}
	return fmt.Sprintf("%gs-%gs", float64(c.TimeoutMinMs)/1e3, float64(c.TimeoutMaxMs)/1e3)
}

// limitsHeader and limitsRows give each implementation's throughput as a
// fraction of the limits measured before its run.
var limitsHeader = []string{"impl", "acq/s", "chain/s", "of chain", "pairs/s", "of pairs"}

func limitsRows(results []Impl) [][]string {
	var rows [][]string
	for _, r := range results {
		l := r.Cost.Limits
		if l == nil {
			continue
		}
		if l.Err != "" {
			rows = append(rows, []string{string(r.Impl), fmt.Sprintf("%.0f", r.PerSec), "probe failed: " + l.Err, "", "", ""})
			continue
		}
		rows = append(rows, []string{string(r.Impl), fmt.Sprintf("%.0f", r.PerSec),
			fmt.Sprintf("%.0f", l.Chains), fmt.Sprintf("%.2f", r.Cost.OfChain),
			fmt.Sprintf("%.0f", l.Pairs), fmt.Sprintf("%.2f", r.Cost.OfPairs)})
	}
	return rows
}

// PrintCost writes what an acquisition cost inside the window and, when
// the limits were probed, the throughput against them.
func PrintCost(w io.Writer, results []Impl) {
	if len(results) == 0 {
		return
	}
	fmt.Fprintln(w)
	printNote(w, "", "", fmt.Sprintf("Inside the measured window (%s): per acquisition, and the work done around it.",
		windowNote(results[0].Cost)))
	printAligned(w, append([][]string{costHeader()}, costRows(results)...))
	if rows := limitsRows(results); len(rows) > 0 {
		fmt.Fprintln(w)
		printNote(w, "", "", fmt.Sprintf("Limits on these servers, probed right after each run (%gs each): the hand-off chain "+
			"(a delete committed, the watcher's event, one getChildren) and awaited create+delete pairs on one connection.",
			probeSeconds(results)))
		printAligned(w, append([][]string{limitsHeader}, rows...))
	}
}

// windowNote says how the runs were counted.
func windowNote(c Cost) string {
	if c.Whole {
		return "the whole run: no warm-up with -fault or -acquisitions"
	}
	return fmt.Sprintf("%.1fs after the warm-up; holds entered in it count, requests and CPU read at its edges", c.WindowSec)
}

// CountLine says in a few words what a run counted: acquisitions in the
// window, and what came around it.
func CountLine(r Impl) string {
	c := r.Cost
	if c.Whole {
		return fmt.Sprintf("%d acquisitions in %.1fs", r.Acquisitions, r.ElapsedSec)
	}
	return fmt.Sprintf("%d acquisitions in the %.1fs window (%.0f/s; run %.1fs: %d holds in the warm-up, %d after the window, %d waits abandoned at the deadline)",
		r.Acquisitions, c.WindowSec, r.PerSec, r.ElapsedSec, c.HoldsWarmup, c.HoldsAfter, c.Abandoned)
}

// costNote says how to read the cost table.
const costNote = "warm-up holds and after window: holds entered before the window and after it (a lock that " +
	"cannot abandon a wait grants its queued waiters after the deadline); abandoned: acquisitions begun and given up at " +
	"the deadline. Client CPU: the worker processes' user + system time (getrusage), server CPU: the ZooKeeper servers' " +
	"(/proc; n/a for servers stress did not start; it includes the sampler's wchp and getChildren), both read at the " +
	"window's edges and divided by the holds entered between the readings. peak gor/proc: the most goroutines of one worker process. req/acq (server): requests the servers " +
	"received (mntr), (client): requests the workers wrote, then by kind; other: pings, setData, setWatches and the " +
	"rest. Lease waits: grants that waited for the session to be confirmed with the leader; lapses: the lease ran out " +
	"and ended holds. Session timeout: what the servers granted."

// limitsNote says how to read the limits table; %g is each probe's length.
const limitsNote = "Limits on the same servers, probed right after each implementation's run (%gs each): chain/s, " +
	"the hand-off chain every FIFO lock on one contended path sits on (a holder's delete committed, the watcher's event, " +
	"one getChildren; only the links are timed); pairs/s, awaited ephemeral create + delete pairs on one connection " +
	"(an uncontended acquire and release). of chain / of pairs: the throughput over each."

// negotiated is the session timeout the servers granted the workers of
// every implementation.
func negotiated(results []Impl) string {
	var out []string
	for _, r := range results {
		out = append(out, fmt.Sprintf("%s %s", r.Impl, timeoutText(r.Cost)))
	}
	return strings.Join(out, ", ")
}

// windowSetting describes the measured window of cfg's runs.
func windowSetting(cfg runner.Config) string {
	if !cfg.Windowed() {
		return "the whole run (no warm-up with -fault or -acquisitions)"
	}
	probe := "no probe of the limits"
	if cfg.Probe > 0 {
		probe = fmt.Sprintf("limits probed for %v each right after each run", cfg.Probe)
	}
	return fmt.Sprintf("%v after a warm-up of %v; %s", cfg.Duration, cfg.Warmup, probe)
}

// violations counts the violations of every implementation.
func violations(s Summary) int {
	n := 0
	for _, r := range s.Results {
		n += r.Check.Violations()
	}
	return n
}

// probeSeconds is the length of the limits' probes of results.
func probeSeconds(results []Impl) float64 {
	for _, r := range results {
		if r.Cost.Limits != nil {
			return r.Cost.Limits.Seconds
		}
	}
	return 0
}

// HostText writes how the machine's processors were spent, as "busy% /
// steal%", or n/a.
func HostText(h *runner.HostCPU) string {
	if h == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%% / %.0f%%", 100*h.Busy, 100*h.Steal)
}

// RedsyncNote says how a redsync run is counted: on its redis-server, its
// commands mapped to the request kinds of the ZooKeeper locks. The notes
// under the tables add it when redsync ran (WithRedsyncNote).
const RedsyncNote = "redsync: the server is the redis-server stress started (server CPU: its process's, from /proc; " +
	"req/acq (server): the commands it ran, its scripts' own included: redsync's unlock script runs a GET and, on its own " +
	"key, a DEL); the workers' commands count as create (SET NX: one per try), delete (the " +
	"unlock script: after a hold, and after each failed try) and getData (reads; none in a run), the rest (HELLO, " +
	"CLIENT, PING on a new connection) as other; it has no fencing token, so the checker checks the holds' times alone."

// WithRedsyncNote is note, followed by RedsyncNote if redsync is among
// impls.
func WithRedsyncNote(note string, impls []proto.Impl) string {
	if slices.Contains(impls, proto.Redsync) {
		return note + " " + RedsyncNote
	}
	return note
}

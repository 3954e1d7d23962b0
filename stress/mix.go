package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/peers"
	"github.com/tierlock/tierlock/stress/internal/check"
	"github.com/tierlock/tierlock/zkcompat"
)

// Mixed fleets (-mix): the workers of one run use different lock clients on
// the same paths, as a fleet does while it moves to tierlock process by
// process. The checker sees all their holds together.
const (
	implMix      = "mix"      // the name of a mixed run
	implCurator  = "curator"  // Apache Curator's InterProcessMutex (Java), one per thread
	implKazoo    = "kazoo"    // kazoo's Lock (Python) with extra_lock_patterns=("-lock-",), one per thread
	implZkcompat = "zkcompat" // tierlock's drop-in for zk.Lock, one handle per goroutine
)

// mixMember is one implementation of a mixed run and its number of
// worker processes.
type mixMember struct {
	Impl  string `json:"impl"`
	Procs int    `json:"procs"`
}

// mixImpls are the implementations a mixed run can be made of.
var mixImpls = []string{implTier, implTierHandoff, implZklock, implGozk, implZkcompat, implCurator, implKazoo}

// parseMix reads -mix ("tier:2,curator:1,kazoo:1,gozk:1": implementation
// and worker processes) into c: the run is one mixed run of that many
// processes. -procs, if given, must agree with the total; -impl and -fault
// do not go with it (peers do not notice a lost hold).
func parseMix(c *config, v string, set map[string]bool) error {
	if v == "" {
		return nil
	}
	total := 0
	for _, part := range strings.Split(v, ",") {
		name, n, found := strings.Cut(strings.TrimSpace(part), ":")
		procs := 1
		if found {
			var err error
			if procs, err = strconv.Atoi(n); err != nil || procs < 1 {
				return usageErr("-mix: %q: the count must be a positive number", part)
			}
		}
		if !slices.Contains(mixImpls, name) {
			return usageErr("-mix: unknown implementation %q (want %s)", name, strings.Join(mixImpls, ", "))
		}
		if i := slices.IndexFunc(c.Mix, func(m mixMember) bool { return m.Impl == name }); i >= 0 {
			c.Mix[i].Procs += procs
		} else {
			c.Mix = append(c.Mix, mixMember{name, procs})
		}
		total += procs
	}
	switch {
	case set["procs"] && c.Procs != total:
		return usageErr("-mix makes %d worker processes but -procs says %d (leave -procs out with -mix)", total, c.Procs)
	case set["impl"]:
		return usageErr("-mix and -impl do not go together: a mixed run is one run of its members")
	case c.Faults != nil:
		return usageErr("-mix cannot be run with -fault: the peers do not notice a lost hold")
	}
	c.Procs = total
	c.Impls = []string{implMix}
	return nil
}

// implOf is the implementation of the worker in slot for a run of name.
func (c config) implOf(name string, slot int) string {
	if name != implMix {
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

// preparePeers compiles the Java peer (and writes the Python one) once,
// before the workers of a mixed run start, into the run's directory.
func (r *runner) preparePeers(ctx context.Context, name string) error {
	for _, m := range r.cfg.Mix {
		if name != implMix || (m.Impl != implCurator && m.Impl != implKazoo) {
			continue
		}
		if _, err := peers.Command(ctx, peers.Kind(m.Impl), r.tmp, "prepare"); err != nil {
			return fmt.Errorf("%w: %s: %w", errRun, m.Impl, err)
		}
	}
	return nil
}

// peerImpl drives a Curator or kazoo process: its threads are the worker's
// goroutines, each with its own lock per path.
type peerImpl struct{ p *peers.Proc }

func newPeerImpl(ctx context.Context, spec workerSpec) (*peerImpl, error) {
	// The parent prepared the peer next to the record files.
	p, err := peers.Serve(ctx, peers.Kind(spec.Impl), filepath.Dir(spec.RecordFile), spec.Servers,
		spec.SessionTimeout, spec.Goroutines, spec.Paths)
	if err != nil {
		return nil, err
	}
	return &peerImpl{p}, nil
}

func (im *peerImpl) holder(g int) holder { return peerHolder{im.p, g} }
func (im *peerImpl) tokenKind() string   { return "" }
func (im *peerImpl) close() error        { return im.p.Close() }

type peerHolder struct {
	p *peers.Proc
	g int
}

// acquire: the peer's sequence number is not a token comparable with the
// other implementations', so none is reported.
func (h peerHolder) acquire(ctx context.Context, p int) (int64, error) {
	_, err := h.p.Acquire(ctx, h.g, p)
	return 0, err
}
func (h peerHolder) release(p int) error                      { return h.p.Release(h.g, p) }
func (h peerHolder) lost(int) (<-chan struct{}, func() error) { return nil, nil }

// zkcompatImpl is the drop-in as code written for zk.Lock uses it: one
// handle per goroutine and path on one connection; underneath, one node
// per path for the process.
type zkcompatImpl struct{ *gozkImpl }

func newZkcompatImpl(ctx context.Context, spec workerSpec) (*zkcompatImpl, error) {
	im, err := newGozkImpl(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &zkcompatImpl{im}, nil
}

func (im *zkcompatImpl) tokenKind() string { return "zxid" }

func (im *zkcompatImpl) holder(int) holder {
	return &zkcompatHolder{im: im.gozkImpl, locks: make([]*zkcompat.Lock, len(im.paths))}
}

func (im *zkcompatImpl) close() error {
	zkcompat.CloseConn(im.conn)
	return im.gozkImpl.close()
}

type zkcompatHolder struct {
	im    *gozkImpl
	locks []*zkcompat.Lock
}

func (h *zkcompatHolder) acquire(ctx context.Context, p int) (int64, error) {
	if h.locks[p] == nil {
		h.locks[p] = zkcompat.NewLock(h.im.conn, h.im.paths[p], zk.WorldACL(zk.PermAll))
	}
	if err := h.locks[p].LockContext(ctx); err != nil {
		return 0, err
	}
	return h.locks[p].Token(), nil
}

func (h *zkcompatHolder) release(p int) error { return h.locks[p].Unlock() }

func (h *zkcompatHolder) lost(p int) (<-chan struct{}, func() error) { return h.locks[p].Lost(), nil }

// printMix tells, for a mixed run, which process ran which implementation,
// what each implementation got, and which implementations' holds
// overlapped (the checker's examples name processes).
func printMix(w io.Writer, cfg config, runs []*implRun) {
	for _, run := range runs {
		if run.name != implMix {
			continue
		}
		famOf := func(proc int32) string {
			if int(proc) < len(run.slotOf) {
				return cfg.implOf(implMix, run.slotOf[proc])
			}
			return "?"
		}
		var procs []string
		for p := range run.slotOf {
			procs = append(procs, fmt.Sprintf("%d %s", p, famOf(int32(p))))
		}
		fmt.Fprintf(w, "mix: processes: %s\n", strings.Join(procs, ", "))
		acq := map[string]int64{}
		for slot, n := range run.perProc {
			acq[cfg.implOf(implMix, slot)] += n
		}
		var total int64
		for _, n := range acq {
			total += n
		}
		fmt.Fprintf(w, "  %-14s %6s %13s %8s %7s\n", "impl", "procs", "acquisitions", "acq/s", "share")
		for _, m := range cfg.Mix {
			share := 0.0
			if total > 0 {
				share = float64(acq[m.Impl]) / float64(total)
			}
			fmt.Fprintf(w, "  %-14s %6d %13d %8.0f %6.1f%%\n", m.Impl, m.Procs, acq[m.Impl],
				float64(acq[m.Impl])/run.elapsed.Seconds(), 100*share)
		}
		pairs := overlapPairs(run.holds, famOf)
		if len(pairs) == 0 {
			fmt.Fprintln(w, "  no overlapping holds")
			continue
		}
		var keys []string
		for k := range pairs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  overlapping holds %s: %d\n", k, pairs[k])
		}
	}
}

// overlapPairs counts, per pair of implementations, the holds that began
// while a hold of the same path had not ended (against the one that ends
// last): who overlapped whom.
func overlapPairs(holds []check.Hold, famOf func(int32) string) map[string]int {
	sorted := slices.Clone(holds)
	slices.SortFunc(sorted, func(a, b check.Hold) int {
		if a.Path != b.Path {
			return int(a.Path - b.Path)
		}
		return int(min(max(a.Enter-b.Enter, -1), 1))
	})
	out := map[string]int{}
	var last *check.Hold
	for i := range sorted {
		h := &sorted[i]
		if last != nil && last.Path != h.Path {
			last = nil
		}
		if last != nil && (last.Exit == 0 || h.Enter < last.Exit) {
			pair := []string{famOf(h.Proc), famOf(last.Proc)}
			slices.Sort(pair)
			out[pair[0]+"+"+pair[1]]++
		}
		if last == nil || (last.Exit != 0 && (h.Exit == 0 || h.Exit > last.Exit)) {
			last = h
		}
	}
	return out
}

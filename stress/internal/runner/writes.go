package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/stress/internal/fault"
	"github.com/tierlock/tierlock/stress/internal/fleet"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/writes"
)

// WritesCheck is the verdict on what the holds of a run with faults wrote
// to the guarded resources (stress/internal/writes): the history of the
// guarded nodes as the servers applied it, and the fenced store's log,
// each checked for stale writes (exclusion.CheckWrites), and what the
// workers saw of their writes.
type WritesCheck struct {
	// Guarded is the check of the guarded nodes' history (nil: the run had
	// none: a read/write lock has no guarded transaction);
	// GuardedErr, a history that disagrees with the nodes (a failure).
	Guarded    *exclusion.WriteResult `json:"guarded,omitempty"`
	GuardedErr string                 `json:"guarded_history_error,omitempty"`
	// Fenced is the check of the fenced store's log of admitted writes.
	Fenced *exclusion.WriteResult `json:"fenced"`
	// Refused counts the writes the fenced store refused, and
	// RefusedWoken those of them made by a paused process after it was
	// let go on: what the fence is for.
	Refused      int `json:"fence_refused"`
	RefusedWoken int `json:"fence_refused_after_pause"`
	// Workers sums how the workers saw their writes end (killed workers'
	// not included: they sent no result).
	Workers proto.WriteCounts `json:"workers"`

	// The fenced store's writes, admitted and refused, each at the instant
	// the store decided: the history checker's (internal/linear).
	admitted, refused []exclusion.Write
}

// fenceLog returns the fenced store's writes, admitted and refused (none
// when c is nil).
func (c *WritesCheck) fenceLog() (admitted, refused []exclusion.Write) {
	if c == nil {
		return nil, nil
	}
	return c.admitted, c.refused
}

// Stale is the number of stale writes that landed, on both resources.
func (c *WritesCheck) Stale() int {
	if c == nil {
		return 0
	}
	n := 0
	if c.Guarded != nil {
		n += c.Guarded.Stale
	}
	if c.Fenced != nil {
		n += c.Fenced.Stale
	}
	return n
}

// OK reports whether no stale write landed and the histories were whole.
func (c *WritesCheck) OK() bool { return c == nil || c.Stale() == 0 && c.GuardedErr == "" }

// EnvUnfenced, set to 1, turns the fenced store's fence off: it admits
// every write, stale or not. A self-test of the check of stale writes, as
// nolock is of the checker: a run with the pause fault must then fail.
const EnvUnfenced = "TIERLOCK_STRESS_UNFENCED"

// resources are the guarded resources of one implementation's run: the
// fenced store and the guarded nodes' collector (nil: none).
type resources struct {
	fence *writes.Server
	coll  *writes.Collector
	guard string // the guarded nodes' base ("": none)
}

// startResources starts the guarded resources of implementation name's
// run below base: with faults and Writes, the fenced store for a mutex or
// a read/write lock, and for a mutex of an implementation with guarded
// transactions (tier, tier-handoff, zklock) the guarded nodes.
func (r *Runner) startResources(name proto.Impl, base string) (*resources, error) {
	cfg := r.cfg
	res := &resources{}
	if cfg.Faults == nil || !cfg.Writes || (cfg.Recipe != proto.Mutex && cfg.Recipe != proto.RW) {
		return res, nil
	}
	var err error
	if res.fence, err = writes.Listen(filepath.Join(r.tmp, string(name)+"-fence.sock")); err != nil {
		return nil, fmt.Errorf("%w: %w", fleet.ErrRun, err)
	}
	if os.Getenv(EnvUnfenced) == "1" {
		res.fence.Unfence()
	}
	if cfg.Recipe == proto.Mutex && (name == proto.Tier || name == proto.TierHandoff || name == proto.Zklock) {
		res.guard = writes.GuardBase(base)
		guards := proto.LockPaths(res.guard, cfg.Paths)
		if err := r.makePaths(guards); err != nil {
			res.close()
			return nil, err
		}
		res.coll = writes.StartCollector(r.conn, guards)
	}
	return res, nil
}

func (res *resources) fenceAddr() string {
	if res.fence == nil {
		return ""
	}
	return res.fence.Addr()
}

// target gives the fault injector the fenced store, if any.
func (res *resources) target(tg fault.Target) fault.Target {
	if res.fence != nil {
		tg.Fence = res.fence
	}
	return tg
}

// check collects and checks the histories once the workers are gone
// (nil: no resources). results are the workers' (nil for killed ones).
func (res *resources) check(results []*proto.Result, paused map[int32][]exclusion.Pause) *WritesCheck {
	if res.fence == nil {
		return nil
	}
	c := &WritesCheck{}
	if res.coll != nil {
		hist, err := res.coll.Finish()
		res.coll = nil
		g := exclusion.CheckWrites(hist)
		c.Guarded = &g
		if err != nil {
			c.GuardedErr = err.Error()
		}
	}
	c.admitted = res.fence.Admitted()
	f := exclusion.CheckWrites(slices.Clone(c.admitted))
	c.Fenced = &f
	refused := res.fence.Refused()
	c.Refused = len(refused)
	for _, w := range refused {
		c.refused = append(c.refused, w.Write)
		for _, p := range paused[w.Proc] {
			if w.At >= p.Cont && w.At <= p.Until {
				c.RefusedWoken++
				break
			}
		}
	}
	for _, r := range results {
		if r != nil {
			c.Workers.Add(r.Writes)
		}
	}
	return c
}

// close stops what is still running.
func (res *resources) close() {
	if res.coll != nil {
		res.coll.Stop()
	}
	if res.fence != nil {
		res.fence.Close()
	}
}

// Line says the verdict in one line.
func (c *WritesCheck) Line() string {
	if c == nil {
		return "no writes checked"
	}
	guarded := "no guarded nodes"
	if c.Guarded != nil {
		guarded = fmt.Sprintf("guarded nodes %d of %d writes", c.Guarded.Stale, c.Guarded.Writes)
	}
	return fmt.Sprintf("stale writes landed: %d (%s; fenced store %d of %d writes; the store refused %d, %d of them made by paused workers on waking)",
		c.Stale(), guarded, c.Fenced.Stale, c.Fenced.Writes, c.Refused, c.RefusedWoken)
}

package runonce

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/runrec"
)

// Run is a job's last run, as its run node records it.
type Run struct {
	// At is the ZooKeeper server's time of the run's start: its timer's
	// firing (see the package doc). After a change of ensemble leader or a
	// step back of the leader's clock, it is the time the rule counts
	// from instead, on the new clock. The zero time if the job never ran.
	At time.Time
	// By names the instance that made the run (WithInstanceName).
	By string
	// Runs counts the runs the node has recorded.
	Runs int64
	// Window is the window of the node's last writer.
	Window time.Duration
}

// LastRun returns the job's last run as its run node records it; the zero
// Run if the job never ran (the node does not exist). It keeps nothing in
// memory for a key this instance does not claim.
func (r *Runner) LastRun(ctx context.Context, key string) (Run, error) {
	if r == nil {
		return Run{}, ErrNil
	}
	if ctx == nil {
		return Run{}, ErrNilContext
	}
	dir, err := r.dir(key)
	if err != nil {
		return Run{}, err
	}
	if r.isClosed() {
		return Run{}, ErrClosed
	}
	data, stat, err := getNode(ctx, r.s, path.Join(dir, runName))
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return Run{}, nil
	case err != nil:
		return Run{}, fmt.Errorf("runonce: job %q: read run node: %w", key, err)
	}
	last := runrec.Derive(data, stat.Mtime, stat.Mzxid)
	return Run{At: time.UnixMilli(last.At), By: last.By, Runs: last.Runs, Window: time.Duration(last.Window) * time.Millisecond}, nil
}

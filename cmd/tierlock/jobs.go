package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/await"
	"github.com/tierlock/tierlock/internal/runrec"
)

// A runonce root (gocronlock's and cronlock's roots are runonce's): below it each job has a node of its own, <job> (the job's
// key, escaped as a URL path segment), with the job's lock and its run
// node, <job>/run. ls shows a table of the jobs found under the root it
// lists: each job's last run, by whom, the runs counted and the window,
// read from the run node as runonce reads it (internal/runrec).

// jobView is one job of a runonce root.
type jobView struct {
	Job     string    `json:"job"` // the job's key (its name in the scheduler), unescaped
	Path    string    `json:"path"`
	LastRun time.Time `json:"last_run"` // the server's time of the last run's start
	By      string    `json:"by"`       // the instance that made it
	Runs    int64     `json:"runs"`
	Window  string    `json:"window"` // the last writer's window
	Writer  string    `json:"writer"` // the last writer
}

// isRunNode reports whether a child named name is a runonce run node.
func isRunNode(name string) bool { return name == "run" }

// jobs reads the run nodes found under the root, in the walk's order;
// nodes gone since the walk, and nodes named run whose data is not a run
// record, are left out.
func (c *cli) jobs(ctx context.Context, root string, runs []string) ([]jobView, error) {
	out := make([]jobView, 0, len(runs))
	for _, p := range runs {
		type read struct {
			data []byte
			stat *zk.Stat
		}
		r, err := await.Call(ctx, func() (read, error) {
			data, stat, err := c.s.Conn().Get(p)
			return read{data, stat}, err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		if _, ok := runrec.Decode(r.data); !ok {
			continue // a node named run, not runonce's
		}
		last := runrec.Derive(r.data, r.stat.Mtime, r.stat.Mzxid)
		dir := path.Dir(p)
		name, err := url.PathUnescape(relName(root, dir))
		if err != nil {
			name = relName(root, dir)
		}
		out = append(out, jobView{Job: name, Path: dir, LastRun: time.UnixMilli(last.At), By: last.By, Runs: last.Runs,
			Window: (time.Duration(last.Window) * time.Millisecond).String(), Writer: last.Writer})
	}
	return out, nil
}

// printJobs writes the jobs' table.
func printJobs(w io.Writer, js []jobView) error {
	rows := [][]string{{"JOB", "LAST-RUN", "AGO", "RUNS", "WINDOW", "BY"}}
	now := time.Now()
	for _, j := range js {
		by := j.By
		if by == "" {
			by = "-"
		}
		rows = append(rows, []string{j.Job, j.LastRun.Format("2006-01-02 15:04:05.000"), age(now.Sub(j.LastRun).Seconds()),
			fmt.Sprint(j.Runs), j.Window, by})
	}
	t := &table{w: w, max: maxWidth}
	if err := t.rows(rows...); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s (runonce: LAST-RUN by the ZooKeeper server's clock)\n", plural(len(js), "job"))
	return err
}

// printLsJobs ends ls's summary of a root with its jobs, if any.
func printLsJobs(w io.Writer, js []jobView) error {
	if len(js) == 0 {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return printJobs(w, js)
}

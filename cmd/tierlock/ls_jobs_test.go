package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/runrec"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestLsGocronRoot (issue 39, item 4): ls on a gocronlock root lists its
// jobs, each with its last run, the instance that made it, the runs
// counted and the window, read from the run nodes as gocronlock reads them
// (written here as gocronlock writes them: gocronlock is a module of its
// own, which this command does not import).
func TestLsGocronRoot(t *testing.T) {
	root := zktest.Path(t)
	conn := connect(t).Conn()
	mk := func(p string, data []byte) {
		t.Helper()
		if _, err := conn.Create(p, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	makeParents(t, conn, root)
	mk(root, nil)
	now := time.Now().UnixMilli()
	// report: node-2's write ran (its timer a second after node-1's run);
	// a/b: node-0's write skipped, the last run stays node-1's.
	for name, rec := range map[string]runrec.Record{
		"report": {Last: now - 1000, LastBy: "node-1", Runs: 41, Window: 500, By: "node-2", Delay: 3},
		"a%2Fb":  {Last: now - 100, LastBy: "node-1", Runs: 7, Window: 500, By: "node-0", Delay: 3},
	} {
		mk(root+"/"+name, nil)
		mk(root+"/"+name+"/lock", nil)
		mk(root+"/"+name+"/run", rec.Encode())
	}
	mk(root+"/other", nil)
	mk(root+"/other/run", []byte("not a run record"))

	r := tierlock(t, "ls", root)
	r.want(t, exitOK, "JOB", "report", "node-2", "42", "a/b", "node-1", "500ms", "2 jobs")
	r = tierlock(t, "ls", "-json", root)
	r.want(t, exitOK)
	var got struct {
		Jobs []jobView `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if len(got.Jobs) != 2 {
		t.Fatalf("jobs %+v, want 2", got.Jobs)
	}
	for _, j := range got.Jobs {
		checkJobView(t, j)
	}
}

// makeParents makes root's parents.
func makeParents(t *testing.T, conn *zk.Conn, root string) {
	t.Helper()
	for i := 1; i < len(root); i++ {
		if root[i] == '/' {
			if _, err := conn.Create(root[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatal(err)
			}
		}
	}
}

// checkJobView holds j, a job of TestLsGocronRoot's, to its record.
func checkJobView(t *testing.T, j jobView) {
	t.Helper()
	switch j.Job {
	case "report":
		if j.By != "node-2" || j.Runs != 42 || time.Since(j.LastRun) > time.Minute {
			t.Errorf("report: %+v", j)
		}
	case "a/b":
		if j.By != "node-1" || j.Runs != 7 || j.Writer != "node-0" {
			t.Errorf("a/b: %+v", j)
		}
	default:
		t.Errorf("job %+v", j)
	}
}

// TestLsRunonceRoot (issue 45): ls lists the jobs of a root that runonce
// itself wrote, as gocronlock's and cronlock's Runners write theirs: the
// job's key unescaped, the instance that ran it, the runs, the window.
func TestLsRunonceRoot(t *testing.T) {
	root := zktest.Path(t)
	ctx := zktest.Context(t, 20*time.Second)
	for i, name := range []string{"node-a", "node-b"} {
		r, err := runonce.New(connect(t), root, runonce.WithInstanceName(name), runonce.WithWindow(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		job := []string{"nightly/report", "cleanup"}[i]
		if err := r.Do(ctx, job, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	r := tierlock(t, "ls", root)
	r.want(t, exitOK, "nightly/report", "node-a", "cleanup", "node-b", "1s", "2 jobs (runonce: LAST-RUN by the ZooKeeper server's clock)")
}

// TestLsNamesWhoRan (issue 50, item 6): a's run holds the job's lock (an
// instance killed mid-run keeps it until its session expires) and b
// attempts the next tick, which is lost. b's write counted as the tick's
// run, and ls named b as the last runner, an instance that only wrote: it
// names a, who ran, and when.
func TestLsNamesWhoRan(t *testing.T) {
	root := zktest.Path(t)
	ctx := zktest.Context(t, 20*time.Second)
	const w = 100 * time.Millisecond
	a, err := runonce.New(connect(t), root, runonce.WithInstanceName("node-a"), runonce.WithWindow(w))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := runonce.New(connect(t), root, runonce.WithInstanceName("node-b"), runonce.WithWindow(w))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	held, err := a.Claim(ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	for range 2 {
		time.Sleep(w + 50*time.Millisecond)
		if _, err := b.Claim(ctx, "report"); !errors.Is(err, runonce.ErrLockHeld) {
			t.Fatalf("b's attempt while a runs: %v, want ErrLockHeld", err)
		}
	}
	r := tierlock(t, "ls", "-json", root)
	r.want(t, exitOK)
	var got struct {
		Jobs []jobView `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if len(got.Jobs) != 1 || got.Jobs[0].By != "node-a" || got.Jobs[0].Runs != 1 || time.Since(got.Jobs[0].LastRun) < 2*w {
		t.Errorf("ls: %+v, want report's one run, by node-a, %v ago or more", got.Jobs, 2*w)
	}
}

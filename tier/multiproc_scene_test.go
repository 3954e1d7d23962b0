package tier_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/child"
	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/linear"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// A worker child is the test binary re-executed (internal/child) in role
// multiprocRole; TestMain hands a process started in any child role that
// exitIfKillChild did not take to childMain.
const (
	childEnv      = child.RoleEnv
	multiprocRole = "tier-multiproc-worker"
	childReadyMsg = "ready"
)

// multiprocTask is what a worker child does.
type multiprocTask struct {
	Servers    []string
	Path       string
	Journal    string // the shared exclusion.Journal
	Proc       int
	Goroutines int
	Iterations int
}

// childMain is a worker process: G goroutines each acquire the lock N times
// and append enter and exit records, with the fencing token, to a shared
// exclusion.Journal (one O_APPEND file). The kernel orders appends to one
// file, so the file is a global order of enters and exits across
// processes: the independent checker in TestMultiProcessExclusion reads it.
func childMain() int {
	var task multiprocTask
	if err := child.Task(&task); err != nil || child.Role() != multiprocRole {
		fmt.Fprintln(os.Stderr, "bad child task:", child.Role(), err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := zklock.Connect(ctx, task.Servers, zklock.WithLogger(quietLog))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	l, err := tier.New(s, task.Path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer l.Close()
	j, err := exclusion.OpenJournal(task.Journal)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer j.Close()
	fmt.Println(childReadyMsg)
	proc := int32(task.Proc)
	var wg sync.WaitGroup
	failed := make(chan error, task.Goroutines)
	for i := 0; i < task.Goroutines; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < task.Iterations; k++ {
				held, err := l.Acquire(ctx)
				if err != nil {
					failed <- err
					return
				}
				tok, _ := l.Token(held)
				if err := j.Enter(proc, int32(i), 0, tok); err != nil {
					failed <- err
				}
				if err := j.Exit(proc, int32(i), 0); err != nil {
					failed <- err
				}
				if err := l.Release(held); err != nil {
					failed <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(failed)
	for err := range failed {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Four processes of 16 goroutines each on one path: the records show no
// overlap and strictly increasing tokens, and ZooKeeper never holds more
// than one node and one watch per process.
func TestMultiProcessExclusion(t *testing.T) {
	const procs, goroutines, iterations = 4, 16, 8
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	file := t.TempDir() + "/records"

	var workers []*child.Proc
	for i := 0; i < procs; i++ {
		c, err := child.Start(child.Spec{
			Role: multiprocRole, Args: []string{"-test.run=^$"}, Stderr: os.Stderr,
			Task: multiprocTask{Servers: servers, Path: p, Journal: file, Proc: i, Goroutines: goroutines, Iterations: iterations},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Kill(); _ = c.Wait() })
		if line := <-c.Lines(); string(line) != childReadyMsg {
			t.Fatalf("worker %d: %q (%s)", i, line, c.Describe("worker"))
		}
		workers = append(workers, c)
	}

	// Sample the queue and the watches while the workers run.
	obs := connect(t, servers)
	done := make(chan error, procs)
	for _, c := range workers {
		go func() { done <- c.Wait() }()
	}
	peakNodes, peakWatches, samples := 0, 0, 0
	for finished := 0; finished < procs; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("worker failed: %v", err)
			}
			finished++
			continue
		case <-time.After(20 * time.Millisecond):
		}
		samples++
		perOwner := map[int64]int{}
		for _, c := range children(t, obs.Conn(), p) {
			if ok, st, err := obs.Conn().Exists(p + "/" + c); err == nil && ok {
				perOwner[st.EphemeralOwner]++
			}
		}
		for _, n := range perOwner {
			peakNodes = max(peakNodes, n)
		}
		for _, n := range watchesBySession(t, p+"/") {
			peakWatches = max(peakWatches, n)
		}
	}
	t.Logf("%d samples: peak znodes per process %d, peak watches per process %d", samples, peakNodes, peakWatches)
	if peakNodes > 1 || peakWatches > 1 {
		t.Errorf("peak per process: %d znodes, %d watches; want at most 1 each", peakNodes, peakWatches)
	}
	checkRecords(t, file, procs*goroutines*iterations)
}

// checkRecords is the independent checker (internal/exclusion) over the
// journal: at most one holder between an enter and its exit, and every
// hold's token above the previous one's; and Porcupine's check of the same
// holds against a model of a lock with fencing tokens (internal/linear).
func checkRecords(t *testing.T, file string, want int) {
	t.Helper()
	holds := readJournal(t, file)
	res := exclusion.Check(holds, exclusion.Options{Tokens: true})
	for _, v := range res.Examples {
		switch v.Kind {
		case exclusion.Overlap:
			t.Fatalf("overlap: %v entered while %v held the lock", v.Hold, *v.Prev)
		case exclusion.Token:
			t.Fatalf("token %d of %v not above %d", v.Hold.Token, v.Hold, v.Prev.Token)
		default:
			t.Fatalf("%s: %v: %s", v.Kind, v.Hold, v.Detail)
		}
	}
	if res.Holds != want {
		t.Fatalf("%d holds recorded, want %d", res.Holds, want)
	}
	p := linear.Check(linear.History{Holds: holds}, linear.Options{Tokens: true})
	if !p.OK() {
		t.Fatal(p)
	}
	t.Log(p)
}

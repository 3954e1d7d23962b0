package tier_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/child"
	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// multiLockRole is the role of a multi-lock worker child. Its dispatch is
// in an init function of this file, so that the shared TestMain is not
// touched: init runs before TestMain, and in a parent or a child of another
// role Dispatch returns.
const multiLockRole = "tier-multilock-worker"

func init() { child.Dispatch(map[string]func() int{multiLockRole: multiLockChildMain}) }

// multiLockTask is what a multi-lock worker child does.
type multiLockTask struct {
	Servers    []string
	Root       string // paths Root/p0 .. Root/p<Paths-1>
	Journal    string // the shared exclusion.Journal
	Proc       int
	Goroutines int
	Iterations int
	Paths      int
	Members    int           // per set, drawn from the paths, in random order
	Wait       time.Duration // per Acquire: longer means a deadlock
	Unordered  bool          // take the members in the order drawn (the seam)
}

// deadlockMsg starts the line a worker prints when an Acquire outlived
// Wait: with a few goroutines ahead holding for microseconds, only a
// deadlock makes a wait that long.
const deadlockMsg = "deadlock"

// multiLockChildMain is a worker process: G goroutines each take Members
// of the paths as one multi-lock hold, in a random order, N times, and
// journal an enter and an exit per member path with its token.
func multiLockChildMain() int {
	var task multiLockTask
	if err := child.Task(&task); err != nil {
		fmt.Fprintln(os.Stderr, "bad child task:", err)
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
	locks := make([]tier.Member, task.Paths)
	for i := range locks {
		l, err := tier.New(s, fmt.Sprintf("%s/p%d", task.Root, i))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer l.Close()
		locks[i] = l
	}
	j, err := exclusion.OpenJournal(task.Journal)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer j.Close()
	newMultiLock := tier.NewMultiLock
	if task.Unordered {
		newMultiLock = tier.NewUnorderedMultiLockForTest
	}
	fmt.Println(childReadyMsg)
	proc := int32(task.Proc)
	var wg sync.WaitGroup
	failed := make(chan string, task.Goroutines)
	for g := range task.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(task.Proc), uint64(g)))
			for range task.Iterations {
				idx := rng.Perm(task.Paths)[:task.Members]
				set := make([]tier.Member, len(idx))
				for k, i := range idx {
					set[k] = locks[i]
				}
				m, err := newMultiLock(set...)
				if err != nil {
					failed <- err.Error()
					return
				}
				actx, cancel := context.WithTimeout(ctx, task.Wait)
				held, err := m.Acquire(actx)
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					failed <- fmt.Sprintf("%s: %v on %v", deadlockMsg, err, idx)
					return
				} else if err != nil {
					failed <- err.Error()
					return
				}
				toks, err := m.Tokens(held)
				if err != nil {
					failed <- err.Error()
					return
				}
				for _, i := range idx {
					if err := j.Enter(proc, int32(g), int32(i), toks[locks[i].Path()]); err != nil {
						failed <- err.Error()
					}
				}
				for _, i := range idx {
					if err := j.Exit(proc, int32(g), int32(i)); err != nil {
						failed <- err.Error()
					}
				}
				if err := m.Release(held); err != nil {
					failed <- err.Error()
					return
				}
			}
		}()
	}
	wg.Wait()
	close(failed)
	for msg := range failed {
		fmt.Println(msg)
		return 1
	}
	return 0
}

// runMultiLockProcs runs procs worker processes of task and returns what
// the failed ones printed.
func runMultiLockProcs(t *testing.T, procs int, task multiLockTask) []string {
	t.Helper()
	var workers []*child.Proc
	for i := range procs {
		task.Proc = i
		c, err := child.Start(child.Spec{Role: multiLockRole, Args: []string{"-test.run=^$"}, Stderr: os.Stderr, Task: task})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Kill(); _ = c.Wait() })
		if line := <-c.Lines(); string(line) != childReadyMsg {
			t.Fatalf("worker %d: %q (%s)", i, line, c.Describe("worker"))
		}
		workers = append(workers, c)
	}
	var failures []string
	for i, c := range workers {
		var lines []string
		for line := range c.Lines() {
			lines = append(lines, string(line))
		}
		if err := c.Wait(); err != nil {
			failures = append(failures, fmt.Sprintf("worker %d: %v: %s", i, err, strings.Join(lines, "; ")))
		}
	}
	return failures
}

// twoPathsTask is one goroutine per process taking {p0, p1} in an order
// drawn at random, 200 times: taken in the order drawn, two processes
// deadlock within a few rounds (TestMultiLockMultiProcessUnorderedDeadlocks).
// A wait longer than Wait counts as a deadlock: 3 s where one is expected
// (each round of the sorted run takes milliseconds), 15 s where none is, so
// that a busy machine's slow round is not taken for one.
func twoPathsTask(t *testing.T, unordered bool) multiLockTask {
	wait := 15 * time.Second
	if unordered {
		wait = 3 * time.Second
	}
	return multiLockTask{
		Servers: zktest.Servers(t), Root: zktest.Path(t), Journal: t.TempDir() + "/records", Goroutines: 1,
		Iterations: 200, Paths: 2, Members: 2, Wait: wait, Unordered: unordered,
	}
}

// Multi-lock holds across processes. "3of4": three processes of four
// goroutines take sets of 3 of 4 paths, each set in a random order: no
// Acquire waits 20 s (a deadlock), the independent checker finds every
// path's holds disjoint with increasing tokens, and no node is left.
// "2of2": two processes take {p0, p1} in random orders, the run that
// deadlocks without the sort, without a deadlock.
func TestMultiLockMultiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs child processes, about 2 s")
	}
	t.Run("3of4", func(t *testing.T) {
		const procs, goroutines, iterations, members = 3, 4, 15, 3
		servers := zktest.Servers(t)
		root := zktest.Path(t)
		file := t.TempDir() + "/records"
		failures := runMultiLockProcs(t, procs, multiLockTask{
			Servers: servers, Root: root, Journal: file, Goroutines: goroutines,
			Iterations: iterations, Paths: 4, Members: members, Wait: 20 * time.Second,
		})
		if len(failures) > 0 {
			t.Fatalf("%d workers failed: %v", len(failures), failures)
		}
		checkRecords(t, file, procs*goroutines*iterations*members)
		obs := connect(t, servers)
		assertNoNodes(t, obs.Conn(), root+"/p0", root+"/p1", root+"/p2", root+"/p3")
	})
	t.Run("2of2", func(t *testing.T) {
		task := twoPathsTask(t, false)
		if failures := runMultiLockProcs(t, 2, task); len(failures) > 0 {
			t.Fatalf("%d workers failed: %v", len(failures), failures)
		}
		checkRecords(t, task.Journal, 2*task.Iterations*task.Members)
	})
}

// The "2of2" workers taking the members in the order drawn (the seam), not
// in path order, deadlock across processes: the deadlock check of
// TestMultiLockMultiProcess can fail, and the sort is what passes it.
func TestMultiLockMultiProcessUnorderedDeadlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: child processes in deadlocking rounds, about 3 s")
	}
	failures := runMultiLockProcs(t, 2, twoPathsTask(t, true))
	for _, f := range failures {
		if strings.Contains(f, deadlockMsg) {
			t.Logf("as expected: %s", f)
			return
		}
	}
	t.Fatalf("no worker deadlocked in the given order (failures: %v)", failures)
}

package tier_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/child"
	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/linear"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// Close racing grants, without hooks (issue 29, item 1): two processes,
// each round making a Lock, an RWLock and a one-lease Semaphore on shared
// paths, with goroutines acquiring them while a closer closes all three at
// a random moment. A hold is journalled from its grant until its held
// context ends (Close cancels it; the closer journals that it is about to
// close, which ends there the holds Close will find) or its work is done; the independent
// checker (internal/exclusion) finds an overlap if a grant that Close
// raced published a hold nobody cancels while the other process holds.
// Readers of the RWLock race Close too (they are not journalled: readers
// share); RLock must never return a nil context without an error.

const closeStormRole = "tier-close-storm"

type closeStormTask struct {
	Servers    []string
	Paths      [3]string // Lock, RWLock, Semaphore
	Journals   [3]string
	Proc       int
	Rounds     int
	Goroutines int
}

func TestCloseStormTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs child processes in a storm, about 2 s")
	}
	const procs = 2
	servers := zktest.Servers(t)
	root := zktest.Path(t)
	dir := t.TempDir()
	task := closeStormTask{Servers: servers, Rounds: 60, Goroutines: 4}
	for i, name := range []string{"lock", "rw", "sem"} {
		task.Paths[i] = root + "/" + name
		task.Journals[i] = dir + "/" + name
	}
	var workers []*child.Proc
	for i := range procs {
		task.Proc = i
		c, err := child.Start(child.Spec{Role: closeStormRole, Args: []string{"-test.run=^$"}, Stderr: os.Stderr, Task: task})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Kill(); _ = c.Wait() })
		workers = append(workers, c)
	}
	// A worker's own deadline is 2 minutes: one still running a minute past
	// it hangs, and is made to print its goroutines (SIGQUIT) before it is
	// killed, so that the failure says where.
	hung := time.After(3 * time.Minute)
	for i, c := range workers {
		select {
		case <-c.Exited():
		case <-hung:
			for _, w := range workers {
				_ = syscall.Kill(w.Pid(), syscall.SIGQUIT)
			}
			time.Sleep(2 * time.Second)
			t.Fatalf("worker %d hangs (its goroutines are printed above)", i)
		}
		if err := c.Wait(); err != nil {
			t.Fatalf("worker %d: %v (%s)", i, err, c.Describe("worker"))
		}
	}
	for i, opt := range []exclusion.Options{{Tokens: true}, {Tokens: true}, {Permits: 1}} {
		holds := readJournal(t, task.Journals[i])
		res := exclusion.Check(holds, opt)
		for _, v := range res.Examples {
			t.Errorf("%s: %s: %v after %v: %s", task.Paths[i], v.Kind, v.Hold, v.Prev, v.Detail)
		}
		p := linear.Check(linear.History{Holds: holds}, linear.Options{Tokens: opt.Tokens, Permits: opt.Permits})
		if !p.OK() {
			t.Errorf("%s: %v", task.Paths[i], p)
		}
		t.Logf("%s: %d holds checked; %v", task.Paths[i], res.Holds, p)
		if res.Holds == 0 {
			t.Errorf("%s: no hold recorded: the storm tested nothing", task.Paths[i])
		}
	}
}

func readJournal(t *testing.T, file string) []exclusion.Hold {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	holds, err := exclusion.ReadJournal(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return holds
}

// closeStormMain is a storm worker process.
func closeStormMain() int {
	var task closeStormTask
	if err := child.Task(&task); err != nil {
		fmt.Fprintln(os.Stderr, err)
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
	var js [3]*exclusion.Journal
	for i, file := range task.Journals {
		if js[i], err = exclusion.OpenJournal(file); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer js[i].Close()
	}
	w := stormWorker{proc: int32(task.Proc), js: js, g: task.Goroutines}
	for range task.Rounds {
		if err := w.round(ctx, s, task.Paths); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

type stormWorker struct {
	proc int32
	js   [3]*exclusion.Journal
	g    int
	// closing orders, per path, a goroutine's look at its hold and its
	// E line against the closer's C line and Close: the closer writes C
	// and runs Close under the write lock, a goroutine looks and writes E
	// under the read lock. Without it a hold granted before Close began
	// could have its E written after C (its goroutine held back on a
	// loaded machine, loaded make test run 139): the checker, which cuts
	// at C only the holds open there, took that hold, cancelled by Close
	// before its node went, as one that outlived Close, and found the
	// other process's next hold overlapping it.
	closing [3]sync.RWMutex
}

// acquirer is one recipe's Acquire, Release and Token, for the storm.
type acquirer struct {
	acquire func(context.Context) (context.Context, error)
	release func(context.Context) error
	token   func(context.Context) (int64, error)
}

// round makes the three locks, runs w.g goroutines on each and closes them
// all at a random moment.
func (w *stormWorker) round(ctx context.Context, s *zklock.Session, paths [3]string) error {
	l, err := tier.New(s, paths[0])
	if err != nil {
		return err
	}
	rw, err := tier.NewRWLock(s, paths[1])
	if err != nil {
		return err
	}
	sem, err := tier.NewSemaphore(s, paths[2], 1)
	if err != nil {
		return err
	}
	one := func(ctx context.Context) (context.Context, error) { return sem.Acquire(ctx, 1) }
	recipes := [3]acquirer{
		{l.Acquire, l.Release, l.Token},
		{rw.Lock, rw.Release, rw.Token},
		{one, sem.Release, sem.Token},
	}
	errs := make(chan error, 4*w.g)
	var wg sync.WaitGroup
	var first [3]chan struct{} // closed at each recipe's first grant of the round
	for i, r := range recipes {
		first[i] = make(chan struct{})
		var once sync.Once
		granted := func() { once.Do(func() { close(first[i]) }) }
		for g := range w.g {
			wg.Go(func() { errs <- w.loop(ctx, int32(i), int32(g), r, granted) })
		}
	}
	for g := range w.g {
		wg.Go(func() { errs <- readLoop(ctx, rw, g) })
	}
	// Close lands among the grants that follow each recipe's first one,
	// whatever the machine's load (without this, a loaded machine closed
	// most rounds before any grant).
	timeout := time.After(2 * time.Second)
	for _, c := range first {
		select {
		case <-c:
		case <-timeout:
		}
	}
	time.Sleep(time.Duration(rand.IntN(10000)) * time.Microsecond)
	// Each Close is journalled first (a C line): a hold it finds is
	// cancelled before its node is given up, so it ends there, whenever
	// its goroutine gets to write its exit (internal/exclusion's Journal).
	for i, c := range []func() error{l.Close, rw.Close, sem.Close} {
		if err := w.closeJournalled(i, c); err != nil {
			return err
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// closeJournalled writes path i's C line and runs its Close, with no E
// line of this process between them (closing).
func (w *stormWorker) closeJournalled(i int, close func() error) error {
	w.closing[i].Lock()
	defer w.closing[i].Unlock()
	if err := w.js[i].Closing(w.proc, int32(i)); err != nil {
		return err
	}
	_ = close()
	return nil
}

// enter writes the E line of a hold still live (entered true), under the
// read lock of closing: either before the C line, which ends it there, or
// after Close returned, when a hold still live is one Close left (the bug
// the storm looks for) and stays open until its own X line. A hold ended
// already (Close cancelled it, its node given up after) is not journalled.
func (w *stormWorker) enter(i, g int32, r acquirer, held context.Context) (entered bool, err error) {
	w.closing[i].RLock()
	defer w.closing[i].RUnlock()
	if held.Err() != nil {
		return false, nil
	}
	tok, _ := r.token(held)
	if i == 2 {
		tok = 0 // leases: no order of tokens
	}
	return true, w.js[i].Enter(w.proc, g, i, tok)
}

// loop acquires r until it is closed, journalling each hold on path index
// i from its grant to the end of its work or of its held context.
func (w *stormWorker) loop(ctx context.Context, i, g int32, r acquirer, granted func()) error {
	for {
		held, err := r.acquire(ctx)
		switch {
		case errors.Is(err, tier.ErrClosed):
			return nil
		case err != nil:
			return fmt.Errorf("path %d: %w", i, err)
		}
		granted()
		entered, err := w.enter(i, g, r, held)
		if err != nil {
			return err
		}
		if !entered {
			_ = r.release(held) // ended by Close: ErrClosed
			continue
		}
		select {
		case <-held.Done():
		case <-time.After(3 * time.Millisecond):
		}
		if err := w.js[i].Exit(w.proc, g, i); err != nil {
			return err
		}
		if err := r.release(held); err != nil && !errors.Is(err, tier.ErrClosed) && !errors.Is(err, tier.ErrLockLost) {
			return fmt.Errorf("path %d: release: %w", i, err)
		}
	}
}

// readLoop takes the read lock until it is closed: RLock never returns a
// nil context without an error (issue 29, item 4).
func readLoop(ctx context.Context, rw *tier.RWLock, g int) error {
	for {
		held, err := rw.RLock(ctx)
		switch {
		case errors.Is(err, tier.ErrClosed):
			return nil
		case err != nil:
			return fmt.Errorf("reader %d: %w", g, err)
		case held == nil:
			return fmt.Errorf("reader %d: RLock returned a nil context and no error", g)
		}
		time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
		if err := rw.Release(held); err != nil && !errors.Is(err, tier.ErrClosed) && !errors.Is(err, tier.ErrLockLost) {
			return fmt.Errorf("reader %d: release: %w", g, err)
		}
	}
}

package runonce_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestLostTicksTold: a's run of a tick keeps the job's lock (a process
// killed mid-run keeps it until its session expires; here a never
// releases until the end), and b and c, 50 ms apart, attempt the five
// ticks after. Every one of those ticks is lost. b's write counted as the
// tick's run before its lock failed: c skipped it as already run, the
// observers said already_ran for ticks no one ran, LastRun named b as the
// last runner, and nothing above Debug was logged. Now each attempt of a
// lost tick is observed as held, LastRun names a, who ran, and each of b
// and c says it once, naming the holder, when the episode begins and once
// when it ends.
func TestLostTicksTold(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: five ticks of a held job, about 2 s")
	}
	root := zktest.Path(t)
	const w, p = 100 * time.Millisecond, 300 * time.Millisecond
	var mu sync.Mutex
	outcomes := map[string][]string{}
	observe := func(name string) runonce.Option {
		return runonce.WithObserver(func(e runonce.Event) {
			mu.Lock()
			outcomes[name] = append(outcomes[name], e.Outcome.String())
			mu.Unlock()
		})
	}
	a, _ := newRunner(t, root, runonce.WithWindow(w), runonce.WithInstanceName("a"))
	sb, logsB := logged(t, zktest.Servers(t))
	b, err := runonce.New(sb, root, runonce.WithWindow(w), runonce.WithInstanceName("b"), observe("b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sc, logsC := logged(t, zktest.Servers(t))
	c, err := runonce.New(sc, root, runonce.WithWindow(w), runonce.WithInstanceName("c"), observe("c"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := zktest.Context(t, 30*time.Second)
	held, err := a.Claim(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	ranAt := time.Now()
	for range 5 {
		time.Sleep(p)
		for _, r := range []*runonce.Runner{b, c} {
			if ran, err := runOnce(ctx, r, "job", nil); ran || !errors.Is(err, runonce.ErrSkipped) {
				t.Fatalf("an attempt while a holds the lock: ran %v, %v", ran, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	last, err := c.LastRun(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if last.By != "a" || last.At.Sub(ranAt) > 50*time.Millisecond || last.Runs != 1 {
		t.Errorf("LastRun %+v (%v after a's run), want a's run, the only one", last, last.At.Sub(ranAt))
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(p)
	zktest.Eventually(t, 5*time.Second, "b's run once the lock is free", func() bool {
		ran, _ := runOnce(ctx, b, "job", nil)
		return ran
	})
	_, _ = runOnce(ctx, c, "job", nil) // c's next attempt sees b's run
	t.Logf("b's lines:\n%s", strings.Join(runonceLines(logsB.String()), "\n"))
	mu.Lock()
	defer mu.Unlock()
	for name, logs := range map[string]string{"b": logsB.String(), "c": logsC.String()} {
		checkLostTold(t, name, outcomes[name], logs)
	}
}

// checkLostTold holds name's first five outcomes (the lost ticks') to held
// and its logs to one line when the episode began, naming a, and one when
// it ended.
func checkLostTold(t *testing.T, name string, outcomes []string, logs string) {
	t.Helper()
	for i, o := range outcomes[:5] {
		if o != "held" {
			t.Errorf("%s's attempt of lost tick %d observed as %s, want held: %v", name, i+1, o, outcomes)
		}
	}
	begins, ends := strings.Count(logs, "tick lost: the job's lock is held"), strings.Count(logs, "job's lock free again")
	if begins != 1 || ends != 1 || !strings.Contains(logs, "holder=a") || !strings.Contains(logs, "session_expires_by=") {
		t.Errorf("%s told the episode in %d and %d lines, want 1 naming a and its session's expiry, and 1:\n%s", name, begins, ends, logs)
	}
}

package runonce_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestServerClockOff: a ZooKeeper server whose clock is 2 s ahead of the
// host's, or 2 s behind, a real one under libfaketime: an attached job's
// ticks, each claimed on time with its scheduled tick, all run. The stale
// check compared the tick (the host's clock) with the server's clock
// bound from the last write: with the server ahead, every tick after the
// first was skipped as stale, and told "the fleet ran them" (nobody did).
func TestServerClockOff(t *testing.T) {
	for _, off := range []time.Duration{2 * time.Second, -2 * time.Second} {
		t.Run(off.String(), func(t *testing.T) {
			t.Parallel()
			zk := zktest.Ensemble(t, 1, zkserver.WithClockOffset(off))
			warm(t, zk.Addrs())
			s, logs := logged(t, zk.Addrs())
			var outcomes []string
			// A lock timeout of 3 s: a loaded machine's new server is slow to
			// answer its first requests; the clocks are what is tested.
			r, err := runonce.New(s, zktest.Path(t), runonce.WithWindow(300*time.Millisecond), runonce.WithLockTimeout(3*time.Second), runonce.WithObserver(func(e runonce.Event) {
				outcomes = append(outcomes, e.Outcome.String())
			}))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ctx := zktest.Context(t, 30*time.Second)
			const period = 700 * time.Millisecond
			first := time.Now().Truncate(period).Add(period)
			for k := range 6 {
				tick := first.Add(time.Duration(k) * period)
				time.Sleep(time.Until(tick.Add(5 * time.Millisecond)))
				c, err := r.ClaimTick(ctx, "job", tick.Round(0))
				if err != nil {
					t.Errorf("tick %d, claimed %v after it: %v", k, time.Since(tick).Round(time.Millisecond), err)
					continue
				}
				_ = c.Release()
			}
			if got := strings.Join(outcomes, " "); got != "ran ran ran ran ran ran" {
				t.Errorf("outcomes %q, want six ran", got)
			}
			if strings.Contains(logs.String(), "stale") {
				t.Errorf("stale told:\n%s", logs.String())
			}
		})
	}
}

// warm has a new server serve its first requests (a JVM's slowest), so
// that a test's first claim is not late for them.
func warm(t *testing.T, servers []string) {
	t.Helper()
	s := zktest.Connect(t, servers)
	r, err := runonce.New(s, zktest.Path(t)+"-warm")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := zktest.Context(t, 20*time.Second)
	for i := range 20 {
		_ = r.Do(ctx, fmt.Sprint("warm-", i), func(context.Context) error { return nil })
	}
}

// TestHostClockAhead: b's host clock reads 2 s ahead of a's: it fires the
// tick it names T when a's clock reads T-2s. Each tick is its scheduled
// time, named alike by both: every tick runs once, on b while it
// schedules (a's attempts find it ran, and say the clocks differ), on a
// before b's first (ticks b passed over) and from the first b did not
// run, none twice. By the server's clock alone, b's run of T and a's of
// T, 2 s apart, were two ticks, and a's attempts of the ticks before b's
// first said already_ran.
func TestHostClockAhead(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ticks of two hosts' clocks 2 s apart, about 7 s")
	}
	root := zktest.Path(t)
	const w, period = 200 * time.Millisecond, 500 * time.Millisecond
	const ahead = 4 // periods: 2 s
	var mu sync.Mutex
	ran := map[int64][]string{}
	sa, logs := logged(t, zktest.Servers(t))
	a, err := runonce.New(sa, root, runonce.WithWindow(w), runonce.WithInstanceName("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _ := newRunner(t, root, runonce.WithWindow(w), runonce.WithInstanceName("b"))
	ctx := zktest.Context(t, 30*time.Second)
	claim := func(r *runonce.Runner, who string, tick time.Time) string {
		c, err := r.ClaimTick(ctx, "job", tick)
		switch {
		case errors.Is(err, runonce.ErrTickUnknown):
			return "unknown"
		case errors.Is(err, runonce.ErrAlreadyRan):
			return "already_ran"
		case err != nil:
			return err.Error()
		}
		mu.Lock()
		ran[tick.UnixMilli()] = append(ran[tick.UnixMilli()], who)
		mu.Unlock()
		_ = c.Release()
		return "ran"
	}
	t0 := time.Now().Truncate(period).Add(period)
	var aSaid []string
	for k := range 14 {
		tk := t0.Add(time.Duration(k) * period)
		time.Sleep(time.Until(tk))
		if k < 8 {
			claim(b, "b", tk.Add(ahead*period))
		}
		time.Sleep(50 * time.Millisecond)
		aSaid = append(aSaid, claim(a, "a", tk))
	}
	mu.Lock()
	defer mu.Unlock()
	for tick, who := range ran {
		if len(who) > 1 {
			t.Errorf("tick %v ran on %v", time.UnixMilli(tick).Format("05.000"), who)
		}
	}
	for k := range 14 {
		if tick := t0.Add(time.Duration(k) * period).UnixMilli(); len(ran[tick]) != 1 {
			t.Errorf("tick %d ran on %v, want once", k, ran[tick])
		}
	}
	if !strings.Contains(logs.String(), "the hosts' clocks differ") {
		t.Errorf("a did not say the clocks differ:\n%s", logs.String())
	}
	t.Logf("a's outcomes: %v", aSaid)
}

// TestTickOf: a run's context carries the tick it runs (ClaimTick's), for
// a job that processes its tick's data; a Claim without one has none.
func TestTickOf(t *testing.T) {
	r, _ := newRunner(t, zktest.Path(t))
	ctx := zktest.Context(t, 10*time.Second)
	tick := time.Now().Truncate(time.Millisecond)
	c, err := r.ClaimTick(ctx, "job", tick)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := runonce.TickOf(r.RunContext("job")); !ok || !got.Equal(tick) {
		t.Errorf("the run's tick: %v, %v; want %v", got, ok, tick)
	}
	_ = c.Release()
	time.Sleep(runonce.AfterWindow(runonce.DefaultWindow))
	c, err = r.Claim(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if got, ok := runonce.TickOf(c.Context()); ok {
		t.Errorf("a Claim's run has a tick: %v", got)
	}
}

package runonce_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// TestHeldTickRunAfterTheLockFrees: b loses t+1 to a's run of t, and at
// t+2 finds the lock free before a, late (its clock behind, or woken from
// a stop), runs t+1. The end of b's episode waits for the record to show
// t+1 run or let go, and takes it back at t+3. On the code before, b told
// the end at t+2 with t+1 lost ("ticks_lost=1 ticks_run_after=0"), and a
// then ran it: cronlock's fleet with an instance 2 s behind told 78 ticks
// lost that ran.
func TestHeldTickRunAfterTheLockFrees(t *testing.T) {
	pair := twoInstances(t)
	a, b, logs := pair.a, pair.b, pair.logs
	ctx := zktest.Context(t, 20*time.Second)
	const period = time.Second
	t0 := time.Now().Truncate(period).Add(period)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * period) }
	claim := func(r *runonce.Runner, i int) error {
		c, err := r.ClaimTick(ctx, "job", at(i))
		if err == nil {
			err = c.Release()
			runonce.WaitLockFree(t, r, "job")
		}
		return err
	}
	time.Sleep(time.Until(at(0)))
	run, err := a.ClaimTick(ctx, "job", at(0))
	if err != nil {
		t.Fatalf("a's tick t: %v", err)
	}
	time.Sleep(time.Until(at(1)))
	if _, err := b.ClaimTick(ctx, "job", at(1)); !errors.Is(err, runonce.ErrLockHeld) {
		t.Fatalf("b's tick t+1 while a's run of t goes on: %v, want ErrLockHeld", err)
	}
	if err := run.Release(); err != nil {
		t.Fatal(err)
	}
	runonce.WaitLockFree(t, a, "job")
	time.Sleep(time.Until(at(2)))
	if err := claim(b, 2); err != nil {
		t.Fatalf("b's tick t+2, the lock free: %v", err)
	}
	if err := claim(a, 1); err != nil {
		t.Fatalf("a's late fire of t+1: %v, want a run (no instance ran it)", err)
	}
	time.Sleep(time.Until(at(3)))
	if err := claim(b, 3); err != nil {
		t.Fatalf("b's tick t+3: %v", err)
	}
	out := logs.String()
	if n := strings.Count(out, "job's lock free again"); n != 1 || !strings.Contains(out, "ticks_lost=0 ticks_run_after=1") {
		t.Errorf("b's episode ended in %d lines, want 1 taking back t+1, which a ran after the lock was free:\n%s", n, out)
	}
}

// TestHeldTickRunAfter (the ninth review of the fleet, item 3): a's run
// of tick t lasts longer than the period, so b's claim of t+1 finds the
// job's lock held; a's scheduler then fires t+1 when the run ends
// (cron.DelayIfStillRunning), and a runs it. b's episode ends, at its
// claim of t+2, saying that the tick it could not run ran after: on the
// code before, its line counted it lost ("ticks_lost=1").
func TestHeldTickRunAfter(t *testing.T) {
	pair := twoInstances(t)
	a, b, logs := pair.a, pair.b, pair.logs
	ctx := zktest.Context(t, 20*time.Second)
	const period = time.Second
	t0 := time.Now().Truncate(period).Add(period)
	time.Sleep(time.Until(t0))
	run, err := a.ClaimTick(ctx, "job", t0)
	if err != nil {
		t.Fatalf("a's tick t: %v", err)
	}
	time.Sleep(time.Until(t0.Add(period)))
	if _, err := b.ClaimTick(ctx, "job", t0.Add(period)); !errors.Is(err, runonce.ErrLockHeld) {
		t.Fatalf("b's tick t+1 while a's run of t goes on: %v, want ErrLockHeld", err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := run.Release(); err != nil {
		t.Fatal(err)
	}
	late, err := a.ClaimTick(ctx, "job", t0.Add(period)) // DelayIfStillRunning's fire of t+1
	if err != nil {
		t.Fatalf("a's delayed fire of t+1: %v, want a run (no instance ran it)", err)
	}
	_ = late.Release()
	runonce.WaitLockFree(t, a, "job")
	time.Sleep(time.Until(t0.Add(2 * period)))
	if c, err := b.ClaimTick(ctx, "job", t0.Add(2*period)); err != nil {
		t.Fatalf("b's tick t+2: %v", err)
	} else {
		_ = c.Release()
	}
	out := logs.String()
	if !strings.Contains(out, "job's lock free again") || !strings.Contains(out, "ticks_lost=0 ticks_run_after=1") {
		t.Errorf("b's episode's end does not take back t+1, which a ran after:\n%s", out)
	}
}

// TestSlowClaimAwaited (item 3): a claims a named tick through a link
// 400 ms each way (L), lock timeout 5 s: its lock node is made at 3L and
// its record written at 5L. b's claim of the same tick, at 3L, finds the
// lock taken by a claim under way: it waits for a's write by a's bound
// (a's lock timeout from when b saw the lock) within its own lock timeout
// (1.25 s, less an eighth), and skips the tick a ran (already ran). On the
// code before, b gave up at half its own lock timeout, at 3L + 625 ms,
// before a's write, and told the tick lost (ErrLockHeld) while a ran it.
// With b's lock timeout at 600 ms it cannot wait for a's write: it says
// the tick unknown (a may run it), never lost. The margins, about 200 ms
// each side of a's write, are what a busy machine's scheduling may take.
func TestSlowClaimAwaited(t *testing.T) {
	for _, c := range []struct {
		name     string
		bTimeout time.Duration
		want     error
	}{
		{"within-b-timeout", 1250 * time.Millisecond, runonce.ErrAlreadyRan},
		{"past-b-timeout", 600 * time.Millisecond, runonce.ErrTickUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := faultproxy.New(zktest.Servers(t)[0])
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			root := zktest.Path(t)
			sa := zktest.Connect(t, []string{p.Addr()}, zklock.WithSessionTimeout(6*time.Second))
			const w = 3 * time.Second // a window long enough for b's claim at 3L to be on time
			a, err := runonce.New(sa, root, runonce.WithInstanceName("a"), runonce.WithLockTimeout(5*time.Second), runonce.WithWindow(w))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			sb, logs := logged(t, zktest.Servers(t))
			b, err := runonce.New(sb, root, runonce.WithInstanceName("b"), runonce.WithLockTimeout(c.bTimeout), runonce.WithWindow(w))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			ctx := zktest.Context(t, 20*time.Second)
			t0 := time.Now()
			first, err := a.ClaimTick(ctx, "job", t0) // the job's record, and a named last run
			if err != nil {
				t.Fatal(err)
			}
			_ = first.Release()
			runonce.WaitLockFree(t, a, "job")
			tick := t0.Add(w + 500*time.Millisecond)
			p.SetLatency(400 * time.Millisecond)
			time.Sleep(time.Until(tick))
			aErr := make(chan error, 1)
			go func() {
				c, err := a.ClaimTick(ctx, "job", tick)
				if err == nil {
					err = c.Release()
				}
				aErr <- err
			}()
			lockDir := root + "/job/lock"
			zktest.Eventually(t, 5*time.Second, "a's lock node", func() bool {
				kids, _, err := sb.Conn().Children(lockDir)
				return err == nil && len(kids) > 0
			})
			_, err = b.ClaimTick(ctx, "job", tick)
			if err := <-aErr; err != nil {
				t.Fatalf("a's slow claim: %v, want a run", err)
			}
			if !errors.Is(err, c.want) {
				t.Errorf("b's claim of the tick a's slow claim ran: %v, want %v", err, c.want)
			}
			if strings.Contains(logs.String(), "tick lost") {
				t.Errorf("b told the tick lost:\n%s", logs)
			}
		})
	}
}

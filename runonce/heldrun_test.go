package runonce_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
// a stop), runs t+1. The end of b's episode is told at t+2 with t+1
// undecided, and a line at t+3 takes it back, run after. Told at t+2 with
// t+1 lost ("ticks_lost=1 ticks_run_after=0"), a then ran it: cronlock's
// fleet with an instance 2 s behind told 78 ticks lost that ran.
func TestHeldTickRunAfterTheLockFrees(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ticks of a job held across them, about 4 s")
	}
	pair := twoInstances(t)
	a, b, logs := pair.a, pair.b, pair.logs
	ctx := zktest.Context(t, 20*time.Second)
	at := secondTicks()
	claim := func(r *runonce.Runner, i int) error {
		c, err := r.ClaimTick(ctx, "job", at(i))
		if err == nil {
			err = c.Release()
			runonce.WaitLockFree(t, r, "job")
		}
		return err
	}
	run := claimOnTime(t, ctx, a, at, 0)
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
	if n := strings.Count(out, "job's lock free again"); n != 1 || !strings.Contains(out, "ticks_lost=0 ticks_run_after=0 ticks_undecided=1") {
		t.Errorf("b's episode ended in %d lines, want 1 with t+1 undecided:\n%s", n, out)
	}
	if n := strings.Count(out, "job's held ticks decided"); n != 1 || !strings.Contains(out, "ticks_lost=0 ticks_run_after=1") {
		t.Errorf("%d lines deciding b's held ticks, want 1 taking back t+1, which a ran after the lock was free:\n%s", n, out)
	}
}

// TestHeldTickRunAfter (the ninth review of the fleet, item 3): a's run
// of tick t lasts longer than the period, so b's claim of t+1 finds the
// job's lock held; a's scheduler then fires t+1 when the run ends
// (cron.DelayIfStillRunning), and a runs it. b's episode ends, at its
// claim of t+2, saying that the tick it could not run ran after: on the
// code before, its line counted it lost ("ticks_lost=1").
func TestHeldTickRunAfter(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ticks of a job held across them, about 3 s")
	}
	pair := twoInstances(t)
	a, b, logs := pair.a, pair.b, pair.logs
	ctx := zktest.Context(t, 20*time.Second)
	at := secondTicks()
	run := claimOnTime(t, ctx, a, at, 0)
	time.Sleep(time.Until(at(1)))
	if _, err := b.ClaimTick(ctx, "job", at(1)); !errors.Is(err, runonce.ErrLockHeld) {
		t.Fatalf("b's tick t+1 while a's run of t goes on: %v, want ErrLockHeld", err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := run.Release(); err != nil {
		t.Fatal(err)
	}
	late, err := a.ClaimTick(ctx, "job", at(1)) // DelayIfStillRunning's fire of t+1
	if err != nil {
		t.Fatalf("a's delayed fire of t+1: %v, want a run (no instance ran it)", err)
	}
	_ = late.Release()
	runonce.WaitLockFree(t, a, "job")
	_ = claimOnTime(t, ctx, b, at, 2).Release()
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
	if testing.Short() {
		t.Skip("-short: claims through 400-ms links, about 12 s")
	}
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
			aErr := claimInBackground(ctx, a, tick)
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

// TestHeldByTheNextRunKeepsTheEpisode: b loses t+1 to a's run of t; a,
// its run over, runs t+1 late (cron.DelayIfStillRunning) and b's t+2
// finds the lock held again, by that late run's node; a then runs t+2
// late too. b's episode is one: told once when it begins, and once at t+3
// taking back both ticks it lost. On the code before, the second holder
// began a new episode and the first was forgotten untold, with the t+1 it
// lost and a ran ("ticks_lost=0 ticks_run_after=1" for two held ticks that
// ran): cronlock's fleet with ZooKeeper's clock 2 s behind told 20 ticks
// held that ran, a stopped holder's late run holding the lock again.
func TestHeldByTheNextRunKeepsTheEpisode(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ticks of a job held across them, about 3 s")
	}
	pair := twoInstances(t)
	a, b, logs := pair.a, pair.b, pair.logs
	ctx := zktest.Context(t, 20*time.Second)
	at := secondTicks()
	held := func(i int) {
		t.Helper()
		time.Sleep(time.Until(at(i)))
		if _, err := b.ClaimTick(ctx, "job", at(i)); !errors.Is(err, runonce.ErrLockHeld) {
			t.Fatalf("b's tick t+%d while a runs: %v, want ErrLockHeld", i, err)
		}
	}
	late := func(prev *runonce.Claim, i int) *runonce.Claim {
		t.Helper()
		if err := prev.Release(); err != nil {
			t.Fatal(err)
		}
		c, err := a.ClaimTick(ctx, "job", at(i)) // DelayIfStillRunning's fire of t+i
		if err != nil {
			t.Fatalf("a's delayed fire of t+%d: %v, want a run (no instance ran it)", i, err)
		}
		return c
	}
	run := claimOnTime(t, ctx, a, at, 0)
	held(1)
	run = late(run, 1)
	held(2)
	run = late(run, 2)
	if err := run.Release(); err != nil {
		t.Fatal(err)
	}
	runonce.WaitLockFree(t, a, "job")
	_ = claimOnTime(t, ctx, b, at, 3).Release()
	out := logs.String()
	begun, ended := strings.Count(out, "tick lost: the job's lock is held"), strings.Count(out, "job's lock free again")
	if begun != 1 || ended != 1 || !strings.Contains(out, "ticks_lost=0 ticks_run_after=2") {
		t.Errorf("b's episode told in %d beginnings and %d ends, want 1 and 1 taking back t+1 and t+2, which a ran after:\n%s", begun, ended, out)
	}
}

// TestHeldEpisodeOutlastsTheRecord: a's run of tick t holds the job's
// lock, and b's claims of t+1 to t+11 each find it held; a then runs each
// of them late, one after the other (cron.DelayIfStillRunning, or an
// instance woken from a stop replaying its ticks), so the lock is never
// free for b until t+12. The record names the last runrec.MaxRecent (8) runs
// only: by t+12, t+1 to t+3 have left it. b's episode must take back all
// eleven ticks, which a ran. On the code before, the ticks were taken back
// only at the episode's end, and t+1 to t+3 were let go and counted lost
// ("ticks_lost=3 ticks_run_after=8"): cronlock's mixed fleet told 50 ticks
// held that a stopped instance ran late.
func TestHeldEpisodeOutlastsTheRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: eleven held ticks, about 5 s")
	}
	root := zktest.Path(t)
	logs := new(zktest.SyncBuffer)
	win := runonce.WithWindow(100 * time.Millisecond)
	a, _ := newRunner(t, root, runonce.WithInstanceName("instance-a"), win)
	b, _ := newRunner(t, root, runonce.WithInstanceName("instance-b"), win,
		runonce.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	ctx := zktest.Context(t, 30*time.Second)
	t0 := time.Now().Truncate(time.Second).Add(time.Second)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 300 * time.Millisecond) }
	run := claimOnTime(t, ctx, a, at, 0)
	const held = 11
	for i := 1; i <= held; i++ {
		time.Sleep(time.Until(at(i)))
		if _, err := b.ClaimTick(ctx, "job", at(i)); !errors.Is(err, runonce.ErrLockHeld) {
			t.Fatalf("b's tick t+%d while a runs: %v, want ErrLockHeld", i, err)
		}
		if err := run.Release(); err != nil {
			t.Fatal(err)
		}
		var err error
		if run, err = a.ClaimTick(ctx, "job", at(i)); err != nil { // a's late fire of t+i
			t.Fatalf("a's late fire of t+%d: %v, want a run (no instance ran it)", i, err)
		}
	}
	if err := run.Release(); err != nil {
		t.Fatal(err)
	}
	runonce.WaitLockFree(t, a, "job")
	_ = claimOnTime(t, ctx, b, at, held+1).Release()
	out := logs.String()
	want := fmt.Sprintf("ticks_lost=0 ticks_run_after=%d", held)
	if strings.Count(out, "job's lock free again") != 1 || !strings.Contains(out, want) {
		t.Errorf("b's episode's end does not take back the %d ticks a ran late (want %q):\n%s", held, want, out)
	}
}

// claimOnTime sleeps until at(i), claims that tick on r, and fails t when
// the claim does not run it.
func claimOnTime(t *testing.T, ctx context.Context, r *runonce.Runner, at func(int) time.Time, i int) *runonce.Claim {
	t.Helper()
	time.Sleep(time.Until(at(i)))
	c, err := r.ClaimTick(ctx, "job", at(i))
	if err != nil {
		t.Fatalf("tick t+%d, on time: %v", i, err)
	}
	return c
}

// secondTicks names a job's ticks every second from the next whole one:
// at(0) is its tick t, at(i) t+i.
func secondTicks() (at func(i int) time.Time) {
	t0 := time.Now().Truncate(time.Second).Add(time.Second)
	return func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
}

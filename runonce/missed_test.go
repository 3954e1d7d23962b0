package runonce_test

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// lostTicks keeps the ticks an observer heard told lost.
type lostTicks struct {
	mu    sync.Mutex
	ticks []time.Time
}

func (l *lostTicks) observe(e runonce.Event) {
	if e.Outcome != runonce.Lost {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ticks = append(l.ticks, e.Tick)
}

func (l *lostTicks) take() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.ticks
	l.ticks = nil
	return out
}

// want fails t unless the ticks told lost since the last take are want.
func (l *lostTicks) want(t *testing.T, what string, want ...time.Time) {
	t.Helper()
	got := l.take()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].Equal(want[i])
	}
	if !ok {
		t.Fatalf("%s told lost %v, want %v", what, got, want)
	}
}

// TestMissedTicksDecidedByTheRecord: ticks b's scheduler did not fire
// (Missed) are decided by the job's record once their window and the
// lock timeout passed, at b's next claim: t+1 and t+3, which no instance
// ran, told lost (observer and one line naming them and why); t+2, which a
// ran, not told. When a then runs t+3 late, b's next read tells that it
// ran after all; a tick missed late in b's life is decided at Close.
func TestMissedTicksDecidedByTheRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: eight ticks of a job, about 3 s")
	}
	root := zktest.Path(t)
	logs := new(zktest.SyncBuffer)
	var lost lostTicks
	opts := []runonce.Option{runonce.WithWindow(100 * time.Millisecond), runonce.WithLockTimeout(200 * time.Millisecond)}
	a, _ := newRunner(t, root, append(opts, runonce.WithInstanceName("instance-a"))...)
	b, _ := newRunner(t, root, append(opts, runonce.WithInstanceName("instance-b"), runonce.WithObserver(lost.observe),
		runonce.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))...)
	ctx := zktest.Context(t, 30*time.Second)
	t0 := time.Now().Truncate(time.Second).Add(time.Second)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 400 * time.Millisecond) }
	_ = claimOnTime(t, ctx, a, at, 0).Release()
	runonce.WaitLockFree(t, a, "job")
	_ = claimOnTime(t, ctx, a, at, 2).Release()
	runonce.WaitLockFree(t, a, "job")
	const why = "its scheduler was late (a test)"
	if err := b.Missed("job", []time.Time{at(1), at(2), at(3)}, why); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(at(3).Add(350 * time.Millisecond))) // t+3's window and lock timeout past
	_ = claimOnTime(t, ctx, b, at, 4).Release()
	runonce.WaitLockFree(t, b, "job")
	lost.want(t, "b's claim of t+4 (t+2 ran on a)", at(1), at(3))
	out := logs.String()
	if n := strings.Count(out, "ticks lost: this instance did not run them"); n != 1 || !strings.Contains(out, "ticks_lost=2") || !strings.Contains(out, why) {
		t.Fatalf("%d lines of ticks lost, want one with ticks_lost=2 and why %q:\n%s", n, why, out)
	}
	// a fires t+3 late: no instance ran it, it runs late.
	c, err := a.ClaimTick(ctx, "job", at(3))
	if err != nil {
		t.Fatalf("a's late t+3, which no instance ran: %v", err)
	}
	_ = c.Release()
	runonce.WaitLockFree(t, a, "job")
	_ = claimOnTime(t, ctx, b, at, 5).Release()
	runonce.WaitLockFree(t, b, "job")
	if !strings.Contains(logs.String(), "ticks told lost ran after all") {
		t.Errorf("b's read after a ran t+3 late: no line taking it back:\n%s", logs.String())
	}
	// t+6 missed, decided at b's Close.
	if err := b.Missed("job", []time.Time{at(6)}, why); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(at(6).Add(350 * time.Millisecond)))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	lost.want(t, "b's Close", at(6))
	if err := b.Missed("job", []time.Time{at(7)}, why); !errors.Is(err, runonce.ErrClosed) {
		t.Errorf("Missed after Close: %v, want ErrClosed", err)
	}
}

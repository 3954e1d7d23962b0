package runonce

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// TestLocalSkipAfterAClockJump: this process's monotonic clock falls 30 s
// behind the server's (a host suspend; a leader's clock stepped forward),
// played by moving the server-clock note of its last write 30 s back. The
// note made the instance skip every tick, "already ran", without a write:
// 6 of 6 ticks lost, and the one line blamed the window
// (since_last_run=-29.9s). A negative age is a clock jump: the instance
// writes, runs the ticks, and says so once.
func TestLocalSkipAfterAClockJump(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ticks across a clock jump, about 3 s")
	}
	var logs zktest.SyncBuffer
	s := zktest.Connect(t, zktest.Servers(t), zklock.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	const w, p = 100 * time.Millisecond, 300 * time.Millisecond
	r, err := New(s, zktest.Path(t), WithWindow(w))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := zktest.Context(t, 20*time.Second)
	for range 2 { // the second writes the node, and notes the server's clock
		if err := r.Do(ctx, "job", noop); err != nil {
			t.Fatal(err)
		}
		time.Sleep(p)
	}
	r.clock.mu.Lock()
	r.clock.mtime -= (30 * time.Second).Milliseconds()
	r.clock.mu.Unlock()
	ran := 0
	for range 6 {
		if err := r.Do(ctx, "job", noop); err == nil {
			ran++
		}
		time.Sleep(p)
	}
	out := logs.String()
	t.Logf("%d of 6 ticks ran; logs:\n%s", ran, out)
	if ran < 6 {
		t.Errorf("%d of 6 ticks ran after the clock jump, want 6", ran)
	}
	if strings.Contains(out, "since_last_run=-") || !strings.Contains(out, "clock jump") {
		t.Errorf("the jump not told as one")
	}
}

package zklock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/fourlw"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// Waits that stand long behind a live holder: where the servers say it
// has a connection, nothing is told (a long hold is no stall); where they
// refuse cons, the refusal is told once, and the waits once, without
// claiming the holder has no connection, and their end once.
func TestLongWaitBehindALiveHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two holds of 2.5 s")
	}
	for _, refused := range []bool{false, true} {
		t.Run(map[bool]string{false: "ConsAnswered", true: "ConsRefused"}[refused], func(t *testing.T) {
			if refused {
				defer zklock.SetAskConnections(func(context.Context, []string, fourlw.Options) (fourlw.Connections, error) {
					return fourlw.Connections{}, fmt.Errorf("cons to 127.0.0.1:2181: %w", fourlw.ErrRefused)
				})()
			}
			const timeout = 4 * time.Second
			servers, root := zktest.Servers(t), zktest.Path(t)
			ctx := ctxT(t, 30*time.Second)
			holder := connect(t, servers, zklock.WithSessionTimeout(timeout), zklock.WithLogger(quietLog))
			buf := &zktest.SyncBuffer{}
			log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
			waiter := connect(t, servers, zklock.WithSessionTimeout(timeout), zklock.WithLogger(log))
			paths := []string{root + "/a", root + "/b", root + "/c"}
			var holds []*zklock.Hold
			var waits []<-chan acquired
			for _, p := range paths {
				h, err := newLock(t, holder, p).Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				holds = append(holds, h)
				waits = append(waits, goAcquire(ctx, newLock(t, waiter, p)))
			}
			time.Sleep(timeout/3 + timeout/4) // past the threshold, and the check's answer
			for _, h := range holds {
				if err := h.Release(); err != nil {
					t.Fatal(err)
				}
			}
			for _, w := range waits {
				a := <-w
				if a.err != nil {
					t.Fatal(a.err)
				}
				if err := a.h.Release(); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(200 * time.Millisecond) // a line more, were there one
			lines := stallLog(buf.String())
			stalls := slices.DeleteFunc(slices.Clone(lines), func(l stallLogLine) bool { return !strings.Contains(l.Msg, "stalled behind") })
			if !refused {
				if len(lines) != 0 {
					t.Fatalf("a live holder's waits told:\n%s", buf)
				}
				return
			}
			id := fmt.Sprintf("0x%x", holder.SessionID())
			cannot := slices.DeleteFunc(slices.Clone(lines), func(l stallLogLine) bool { return !strings.Contains(l.Msg, "cannot tell") })
			if len(cannot) != 1 || len(stalls) != 2 {
				t.Fatalf("told %d refusals and %d stall lines, want 1 and 2:\n%s", len(cannot), len(stalls), buf)
			}
			b, e := stalls[0], stalls[1]
			if !strings.Contains(b.Msg, "stalled behind session "+id+" for about") || strings.Contains(b.Msg, "no connection") ||
				b.Session != id || !slices.Equal(b.Locks, paths) {
				t.Errorf("the stall's line: %+v, want %s and %v, no claim of its connection", b, id, paths)
			}
			if !strings.Contains(e.Msg, "no longer stalled behind session "+id) || !strings.Contains(e.Msg, "went") || !slices.Equal(e.Locks, paths) {
				t.Errorf("the end's line: %+v", e)
			}
		})
	}
}

// stallLogLine is a line as slog's JSON handler wrote it.
type stallLogLine struct {
	Msg     string   `json:"msg"`
	Session string   `json:"session"`
	Locks   []string `json:"locks"`
}

// stallLog parses log, one JSON line each.
func stallLog(log string) []stallLogLine {
	var out []stallLogLine
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var v stallLogLine
		if json.Unmarshal([]byte(l), &v) == nil {
			out = append(out, v)
		}
	}
	return out
}

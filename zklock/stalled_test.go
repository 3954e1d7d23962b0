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
	t.Run("ConsAnswered", func(t *testing.T) {
		_, log, _ := longWait(t)
		if lines := stallLog(log); len(lines) != 0 {
			t.Fatalf("a live holder's waits told:\n%s", log)
		}
	})
	t.Run("ConsRefused", func(t *testing.T) {
		defer zklock.SetAskConnections(func(context.Context, []string, fourlw.Options) (fourlw.Connections, error) {
			return fourlw.Connections{}, fmt.Errorf("cons to 127.0.0.1:2181: %w", fourlw.ErrRefused)
		})()
		id, log, paths := longWait(t)
		cannot, stalls := linesWith(log, "cannot tell"), linesWith(log, "stalled behind")
		if len(cannot) != 1 || len(stalls) != 2 {
			t.Fatalf("told %d refusals and %d stall lines, want 1 and 2:\n%s", len(cannot), len(stalls), log)
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

// longWait holds three locks for a little more than a third of a 4-s
// session timeout (past the threshold, and the check's answer), while a
// session waits for each; it returns the holder's session id, the
// waiter's log once every wait was granted, and the lock paths.
func longWait(t *testing.T) (holderID, log string, paths []string) {
	const timeout = 4 * time.Second
	servers, root := zktest.Servers(t), zktest.Path(t)
	ctx := ctxT(t, 30*time.Second)
	holder := connect(t, servers, zklock.WithSessionTimeout(timeout), zklock.WithLogger(quietLog))
	buf := &zktest.SyncBuffer{}
	waiter := connect(t, servers, zklock.WithSessionTimeout(timeout), zklock.WithLogger(jsonWarnings(buf)))
	paths = []string{root + "/a", root + "/b", root + "/c"}
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
	time.Sleep(timeout/3 + timeout/4)
	releaseAll(t, holds)
	grantedAndReleased(t, waits)
	time.Sleep(200 * time.Millisecond) // a line more, were there one
	return fmt.Sprintf("0x%x", holder.SessionID()), buf.String(), paths
}

// A session whose queued nodes lead while it has no connection (its
// proxy partitioned), and which reconnects before it expires: the waits
// behind it tell the stall once, and its end once, as it has a connection
// again.
func TestStallEndsWhenTheHolderReconnects(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a partition of about 2 s")
	}
	servers, root := zktest.Servers(t), zktest.Path(t)
	ctx := ctxT(t, 30*time.Second)
	paths := []string{root + "/a", root + "/b", root + "/c"}
	first := connect(t, servers, zklock.WithLogger(quietLog))
	px := proxyTo(t, servers[0])
	cut := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(4*time.Second), zklock.WithLogger(quietLog))
	buf := &zktest.SyncBuffer{}
	waiter := connect(t, servers, zklock.WithSessionTimeout(2*time.Second), zklock.WithLogger(jsonWarnings(buf)))
	var holds []*zklock.Hold
	var cuts, waits []<-chan acquired
	for _, p := range paths {
		h, err := newLock(t, first, p).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		holds = append(holds, h)
		cuts = append(cuts, goAcquire(ctx, newLock(t, cut, p)))
		eventually(t, 10*time.Second, "the cut session queued", func() bool { return len(children(t, first.Conn(), p)) == 2 })
		waits = append(waits, goAcquire(ctx, newLock(t, waiter, p, zklock.WithRecheckInterval(200*time.Millisecond))))
		eventually(t, 10*time.Second, "the waiter queued", func() bool { return len(children(t, first.Conn(), p)) == 3 })
	}
	id := fmt.Sprintf("0x%x", cut.SessionID())
	px.Partition(0)
	releaseAll(t, holds)
	eventually(t, 3*time.Second, "the stall told", func() bool { return len(linesWith(buf.String(), "stalled behind session "+id)) > 0 })
	px.Heal()
	eventually(t, 5*time.Second, "its end told", func() bool { return len(linesWith(buf.String(), "no longer stalled behind session "+id)) > 0 })
	grantedAndReleased(t, cuts)
	grantedAndReleased(t, waits)
	time.Sleep(200 * time.Millisecond) // a line more, were there one
	log := buf.String()
	begun, ended := linesWith(log, "locks stalled behind session "+id), linesWith(log, "no longer stalled behind session "+id)
	if len(begun) != 1 || len(ended) != 1 || len(linesWith(log, "stalled behind")) != 2 {
		t.Fatalf("told %d stalls and %d ends, want one each:\n%s", len(begun), len(ended), log)
	}
	if !strings.Contains(begun[0].Msg, "no connection") || !slices.Equal(begun[0].Locks, paths) {
		t.Errorf("the stall's line: %+v, want no connection, on %v", begun[0], paths)
	}
	if !strings.Contains(ended[0].Msg, "has a connection again") || !slices.Equal(ended[0].Locks, paths) {
		t.Errorf("the end's line: %+v, want a connection again, on %v", ended[0], paths)
	}
}

// A wait two places behind a head whose session has no connection (the
// node it watches is a live session's): the check reads the head's
// session, and tells the stall once, and its end once, as the head's
// session expires.
func TestStallBehindAHeadNotWatched(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a session's expiry waited out, about 5 s")
	}
	servers, path := zktest.Servers(t), zktest.Path(t)
	ctx := ctxT(t, 30*time.Second)
	px := proxyTo(t, servers[0])
	cut := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(4*time.Second), zklock.WithLogger(quietLog))
	if _, err := newLock(t, cut, path).Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	middle := connect(t, servers, zklock.WithLogger(quietLog))
	next := goAcquire(ctx, newLock(t, middle, path))
	buf := &zktest.SyncBuffer{}
	waiter := connect(t, servers, zklock.WithSessionTimeout(2*time.Second), zklock.WithLogger(jsonWarnings(buf)))
	eventually(t, 10*time.Second, "the middle session queued", func() bool { return len(children(t, middle.Conn(), path)) == 2 })
	last := goAcquire(ctx, newLock(t, waiter, path))
	eventually(t, 10*time.Second, "the waiter queued", func() bool { return len(children(t, middle.Conn(), path)) == 3 })
	id := fmt.Sprintf("0x%x", cut.SessionID())
	px.Partition(0) // the head's session loses its connection, and expires 4 s later
	grantedAndReleased(t, []<-chan acquired{next})
	grantedAndReleased(t, []<-chan acquired{last})
	px.Heal()
	time.Sleep(200 * time.Millisecond) // a line more, were there one
	log := buf.String()
	begun, ended := linesWith(log, "locks stalled behind session "+id), linesWith(log, "no longer stalled behind session "+id)
	if len(begun) != 1 || len(ended) != 1 || len(linesWith(log, "stalled behind")) != 2 {
		t.Fatalf("told %d stalls and %d ends, want one each:\n%s", len(begun), len(ended), log)
	}
	if !strings.Contains(begun[0].Msg, "no connection") || !slices.Equal(begun[0].Locks, []string{path}) {
		t.Errorf("the stall's line: %+v, want no connection, on %s", begun[0], path)
	}
	if !strings.Contains(ended[0].Msg, "went") {
		t.Errorf("the end's line: %+v, want its nodes went", ended[0])
	}
}

// jsonWarnings is a logger of warnings, as JSON lines, to w.
func jsonWarnings(w *zktest.SyncBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// releaseAll releases holds.
func releaseAll(t *testing.T, holds []*zklock.Hold) {
	t.Helper()
	for _, h := range holds {
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	}
}

// grantedAndReleased waits for each acquisition, and releases its hold.
func grantedAndReleased(t *testing.T, acqs []<-chan acquired) {
	t.Helper()
	for _, c := range acqs {
		a := <-c
		if a.err != nil {
			t.Fatal(a.err)
		}
		if err := a.h.Release(); err != nil {
			t.Fatal(err)
		}
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

// linesWith are the lines of log whose message contains s.
func linesWith(log, s string) []stallLogLine {
	return slices.DeleteFunc(stallLog(log), func(l stallLogLine) bool { return !strings.Contains(l.Msg, s) })
}

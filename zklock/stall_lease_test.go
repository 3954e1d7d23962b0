package zklock_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// stallFor is the stop the scenes stand for: longer than their sessions
// (2 s), as a SIGSTOP of 15 s is longer than a 10-s session.
const stallFor = 15 * time.Second

// A hold whose lease ran out while this process was stopped is lost to
// every question asked after the process resumes, whatever it asks first,
// before the lease's timer or the connection's events have run. mono.Jump
// stands for the stop: the monotonic clock the lease is judged by jumps
// 15 s, and the runtime's timers (the lease's, go-zookeeper's), which do
// not see it, stand for the timers a resumed process has not run yet. A
// guarded write is refused unsent, the loss wraps ErrLeaseExpired, and the
// lapse's line says the stall and the holds it ended. Asked first, the
// connection then found gone, the stall's outage counts that hold too.
//
// On the code before (each question read only what had been told), every
// question said the hold stood: Release returned nil, Err nil, Lost was
// open after them, Txn was applied by the server (the node still existed), no lapse
// was told, and the outage's line said holds_ended=0 for a stall that cost
// the hold.
func TestStallLongerThanTheSessionLosesTheHold(t *testing.T) {
	servers := zktest.Servers(t)
	for _, first := range []string{"Release", "Err", "Txn"} {
		t.Run(first, func(t *testing.T) {
			px := proxyTo(t, servers[0])
			buf := &zktest.SyncBuffer{}
			log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
			s := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(2*time.Second), zklock.WithLogger(log))
			ctx := ctxT(t, 30*time.Second)
			h, err := newLock(t, s, zktest.Path(t)).Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if t.Failed() {
					t.Logf("logged:\n%s", buf)
				}
			}()
			back := mono.Jump(stallFor)
			defer back()
			var got error
			switch first {
			case "Release":
				got = h.Release()
			case "Err":
				got = h.Err()
			case "Txn":
				if _, got = h.Txn(ctx); errors.Is(got, zklock.ErrStaleHold) {
					t.Fatalf("Txn was sent, and refused by the server only: %v", got)
				}
			}
			if !errors.Is(got, zklock.ErrLockLost) || !errors.Is(got, zklock.ErrLeaseExpired) {
				t.Errorf("%s after the stall: %v; want ErrLockLost wrapping ErrLeaseExpired", first, got)
			}
			// Every later question agrees, and Lost is closed.
			if err := h.Err(); !errors.Is(err, zklock.ErrLockLost) {
				t.Errorf("Err after %s: %v", first, err)
			}
			select {
			case <-h.Lost():
			default:
				t.Errorf("Lost open after %s found the hold lost", first)
			}
			_, err = h.Txn(ctx)
			switch {
			case first == "Release" && !errors.Is(err, zklock.ErrNotHeld):
				t.Errorf("Txn after Release: %v; want ErrNotHeld", err)
			case first != "Release" && (!errors.Is(err, zklock.ErrLockLost) || errors.Is(err, zklock.ErrStaleHold)):
				t.Errorf("Txn after %s: %v; want refused unsent, wrapping ErrLockLost", first, err)
			}
			lapses := logLines(t, buf, "session not confirmed with the leader in time")
			if len(lapses) != 1 {
				t.Errorf("the lapse told %d times; want once", len(lapses))
			} else {
				checkStallLine(t, lapses[0], 1)
			}
			if first != "Release" {
				return
			}
			// The connection, found gone a moment after: the stall's
			// outage counts the hold its lapse ended.
			px.DropAll()
			zktest.Eventually(t, 10*time.Second, "the outage told", func() bool {
				return len(logLines(t, buf, "no connection to ZooKeeper")) > 0
			})
			checkStallLine(t, logLines(t, buf, "no connection to ZooKeeper")[0], 1)
		})
	}
}

// checkStallLine checks that line says the stall (stalled_for within a
// second under stallFor: the watch measures it to within its period) and
// at least holds holds ended.
func checkStallLine(t *testing.T, line map[string]any, holds int) {
	t.Helper()
	stalled, _ := line["stalled_for"].(float64) // slog's JSON: ns
	if d := time.Duration(stalled); d < stallFor-time.Second || d > stallFor {
		t.Errorf("stalled_for=%v; want about %v: %v", d, stallFor, line)
	}
	if n, _ := line["holds_ended"].(float64); int(n) < holds {
		t.Errorf("holds_ended=%v; want at least %d: %v", line["holds_ended"], holds, line)
	}
}

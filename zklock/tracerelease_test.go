//go:build tierlocktrace

package zklock_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/replay"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// TestTraceReleaseMeetsDisconnection: a Release that runs while the
// session applies a disconnection, before the state is applied (applied
// false) or after it ended the session's holds and before their losses
// are told (applied true). Each side must be one story, told alike to the
// caller and in the trace, which the replay must accept: released before
// the disconnection (Release returns nil, no loss is told), or lost by it
// (Release returns ErrLockLost wrapping ErrDisconnected, the loss handler
// hears it once).
//
// The disconnection's event step was traced as go-zookeeper delivered it,
// and the holds it ended were taken later: a Release in between was traced
// after that step, and its hold was never told lost, which the replay
// refused ("a hold ended by this step was never told lost") in two loaded
// make tests' nemesis runs. After the holds were taken, Release returned
// nil for a hold the session had already found lost.
func TestTraceReleaseMeetsDisconnection(t *testing.T) {
	for _, applied := range []bool{false, true} {
		name := "before the state is applied"
		if applied {
			name = "after it ended the holds"
		}
		t.Run(name, func(t *testing.T) { releaseMeetsDisconnection(t, applied) })
	}
}

func releaseMeetsDisconnection(t *testing.T, applied bool) {
	dir := t.TempDir()
	r, err := trace.Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = trace.Stop() })
	px, err := faultproxy.New(zktest.Servers(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	s := connect(t, []string{px.Addr()})
	told := make(chan error, 2)
	l := newLock(t, s, zktest.Path(t), zklock.WithLossHandler(func(_ string, cause error) { told <- cause }))
	h, err := l.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	var once sync.Once
	remove := zklock.SetApplyHook(func(taken bool) {
		if taken == applied {
			once.Do(func() { released <- h.Release() })
		}
	})
	defer remove()
	px.Reset()
	var got error
	select {
	case got = <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("no Release ran in the disconnection's apply")
	}
	remove()
	var heard []error
	eventually(t, 10*time.Second, "the session back", func() bool { return s.State() == zklock.StateConnected })
	for len(told) > 0 {
		heard = append(heard, <-told)
	}
	if applied {
		if !errors.Is(got, zklock.ErrLockLost) || !errors.Is(got, zklock.ErrDisconnected) {
			t.Errorf("Release after the disconnection ended the hold: %v, want ErrLockLost wrapping ErrDisconnected", got)
		}
		if len(heard) != 1 || !errors.Is(heard[0], zklock.ErrDisconnected) {
			t.Errorf("loss handler heard %v, want ErrDisconnected once", heard)
		}
	} else {
		if got != nil {
			t.Errorf("Release before the disconnection was applied: %v, want nil", got)
		}
		if len(heard) != 0 {
			t.Errorf("loss handler heard %v for a hold released first", heard)
		}
	}
	if err := trace.Stop(); err != nil {
		t.Fatal(err)
	}
	c := replay.New()
	if err := c.ReplayFile(trace.FileName(dir, r.Pid())); err != nil {
		t.Fatal(err)
	}
	res := c.Result()
	for _, v := range res.Violations {
		t.Errorf("refused: %v", v)
	}
	if res.Holds == 0 {
		t.Error("no hold replayed")
	}
	if t.Failed() {
		steps, _ := trace.ReadFile(trace.FileName(dir, r.Pid()))
		for _, st := range steps {
			if k := st.Kind.String(); !strings.HasPrefix(k, "write") && k != "send" && k != "answer" {
				t.Log(st)
			}
		}
	}
}

package tier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// Close racing a grant (issue 29, item 1): Close runs after ZooKeeper
// granted the node and before the hold is published. Close finds no hold
// to cancel and gives the node up; the grant must then not publish a live
// hold. Before the fix (tier.Lock checked closed only before the grant),
// Acquire returned a held context that was never cancelled while another
// process could take the lock: two holders. The hooks stand in the window
// deterministically; TestCloseStormTwoProcesses races the same without them.

// awaitFree waits until another session can take path, i.e. no node of
// ours is left on it.
func awaitFree(t *testing.T, obs *zklock.Session, path string) {
	t.Helper()
	eventually(t, 5*time.Second, "no node left on "+path, func() bool { return len(children(t, obs.Conn(), path)) == 0 })
}

// wantClosedNotHeld fails unless an acquisition that Close raced returned
// ErrClosed and no held context.
func wantClosedNotHeld(t *testing.T, what string, held context.Context, err error) {
	t.Helper()
	if errors.Is(err, tier.ErrClosed) && held == nil {
		return
	}
	live := held != nil && held.Err() == nil
	t.Fatalf("%s with Close between grant and publication: err %v, held context live %v; want ErrClosed and no hold", what, err, live)
}

func TestCloseRacingGrantLock(t *testing.T) {
	servers := zktest.Servers(t)
	s, obs := connect(t, servers), connect(t, servers)
	p := zktest.Path(t)
	l := newLock(t, s, p)
	tier.SetPublishHookForTest(func(*zklock.Hold) { _ = l.Close() })
	defer tier.SetPublishHookForTest(nil)
	held, err := l.Acquire(ctxT(t, 10*time.Second))
	tier.SetPublishHookForTest(nil)
	wantClosedNotHeld(t, "Lock.Acquire", held, err)
	awaitFree(t, obs, p)
}

func TestCloseRacingGrantRWLock(t *testing.T) {
	servers := zktest.Servers(t)
	s, obs := connect(t, servers), connect(t, servers)
	for _, tc := range []struct {
		name string
		take func(rw *tier.RWLock, ctx context.Context) (context.Context, error)
	}{
		{"writer", (*tier.RWLock).Lock},
		{"reader", (*tier.RWLock).RLock},
		{"read under write", func(rw *tier.RWLock, ctx context.Context) (context.Context, error) {
			w, err := rw.Lock(ctx)
			if err != nil {
				return nil, err
			}
			tier.SetRWPublishHookForTest(func(rw *tier.RWLock) { _ = rw.Close() })
			return rw.RLock(w)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := zktest.Path(t)
			rw, err := tier.NewRWLock(s, p)
			if err != nil {
				t.Fatal(err)
			}
			defer rw.Close()
			if tc.name != "read under write" {
				tier.SetRWPublishHookForTest(func(rw *tier.RWLock) { _ = rw.Close() })
			}
			defer tier.SetRWPublishHookForTest(nil)
			held, err := tc.take(rw, ctxT(t, 10*time.Second))
			tier.SetRWPublishHookForTest(nil)
			wantClosedNotHeld(t, tc.name, held, err)
			awaitFree(t, obs, p)
		})
	}
}

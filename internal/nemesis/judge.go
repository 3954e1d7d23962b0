package nemesis

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/linear"
	"github.com/tierlock/tierlock/zklock"
)

// Holder is A's side of a scene: its hold's loss signal and fencing token.
type Holder struct {
	Lost  <-chan struct{} // closed when A is told its hold may be lost
	Cause func() error    // why, once Lost is closed; nil: not checked
	Token int64
}

// Grant is B's acquisition: it returns once B holds (or failed), with B's
// token and how to release.
type Grant func(ctx context.Context) (token int64, release func() error, err error)

type grantResult struct {
	at      time.Time
	token   int64
	release func() error
	err     error
}

// Scene watches the three moments of a fault: A told, A's node gone (as an
// observer on B's side sees it), B granted.
type Scene struct {
	told    chan time.Time
	gone    chan time.Time
	granted chan grantResult
	a       Holder
	start   time.Time // when the watch began: A held then
}

// Watch starts watching: obs (a connection on B's side) watches nodeA,
// a's Lost is awaited, and grant runs on a goroutine of its own. All stop
// with ctx.
func Watch(t *testing.T, ctx context.Context, obs *zk.Conn, nodeA string, a Holder, grant Grant) *Scene {
	t.Helper()
	s := &Scene{told: make(chan time.Time, 1), gone: make(chan time.Time, 1), granted: make(chan grantResult, 1), a: a, start: time.Now()}
	_, _, ch, err := obs.GetW(nodeA)
	if err != nil {
		t.Fatalf("watch A's node %s: %v", nodeA, err)
	}
	go func() {
		select {
		case ev := <-ch:
			if ev.Type == zk.EventNodeDeleted {
				s.gone <- time.Now()
			}
		case <-ctx.Done():
		}
	}()
	go func() {
		select {
		case <-a.Lost:
			s.told <- time.Now()
		case <-ctx.Done():
		}
	}()
	go func() {
		tok, rel, err := grant(ctx)
		s.granted <- grantResult{time.Now(), tok, rel, err}
	}()
	return s
}

// Verdict waits for the three moments (each at most Bound after faultAt),
// logs them and fails t unless A was told before its node was gone and
// before B's grant, with a cause wrapping zklock.ErrLockLost, and B's token
// is above A's. B's hold is released. The scene's two holds then go
// through Porcupine's check (internal/linear).
func (s *Scene) Verdict(t *testing.T, faultAt time.Time) {
	t.Helper()
	g, told, goneAt := s.await(faultAt)
	ms := func(at time.Time) string {
		if at.IsZero() {
			return "never"
		}
		return at.Sub(faultAt).Round(time.Millisecond).String()
	}
	var cause error
	if s.a.Cause != nil && !told.IsZero() {
		cause = s.a.Cause()
	}
	t.Logf("fault at 0: A's node gone at %s, B granted at %s, A told at %s (%v)", ms(goneAt), ms(g.at), ms(told), cause)
	switch {
	case told.IsZero():
		t.Errorf("A was not told within %v of the fault", Bound)
	case s.a.Cause != nil && !errors.Is(cause, zklock.ErrLockLost):
		t.Errorf("A's hold ended with cause %v, want one wrapping ErrLockLost", cause)
	}
	if !goneAt.IsZero() && (told.IsZero() || !told.Before(goneAt)) {
		t.Errorf("LOSS AFTER GRANTABLE: A's node was gone %s before A was told: from then on another process could be granted the lock",
			lag(goneAt, told, faultAt.Add(Bound)))
	}
	released := s.judgeGrant(t, g, told, faultAt)
	s.checkHistory(t, g, told, released)
}

// checkHistory checks the scene's two holds (sceneHolds) with Porcupine
// against a model of a lock with fencing tokens.
func (s *Scene) checkHistory(t *testing.T, g grantResult, told, released time.Time) {
	t.Helper()
	if g.at.IsZero() || g.err != nil {
		return // B never held: there is no second hold to order
	}
	holds := sceneHolds(s.start, s.a.Token, told, g.at, g.token, released)
	if p := linear.Check(linear.History{Holds: holds}, linear.Options{Tokens: true}); !p.OK() {
		t.Errorf("A's and B's holds: %v", p)
	}
}

// sceneHolds is a scene as a history of two holds, in ns from start (from
// 1; 0: never): A's (proc 0) from start until it was told of its loss,
// B's (proc 1) from its grant until its release, each with its token.
func sceneHolds(start time.Time, tokenA int64, told, granted time.Time, tokenB int64, released time.Time) []exclusion.Hold {
	at := func(x time.Time) int64 {
		if x.IsZero() {
			return 0
		}
		return int64(x.Sub(start)) + 1
	}
	return []exclusion.Hold{
		{Proc: 0, Token: tokenA, Enter: at(start), Exit: at(told)},
		{Proc: 1, Token: tokenB, Enter: at(granted), Exit: at(released)},
	}
}

// await collects the three moments: B's grant, A told, A's node gone (zero
// if not within Bound of faultAt).
func (s *Scene) await(faultAt time.Time) (g grantResult, told, goneAt time.Time) {
	deadline := time.NewTimer(time.Until(faultAt.Add(Bound)))
	defer deadline.Stop()
	for g.at.IsZero() || told.IsZero() || goneAt.IsZero() {
		select {
		case g = <-s.granted:
		case told = <-s.told:
		case goneAt = <-s.gone:
		case <-deadline.C:
			return g, told, goneAt
		}
	}
	return g, told, goneAt
}

// judgeGrant fails t unless B was granted after A was told, with a larger
// token; it releases B's hold, and returns when (zero: B held nothing).
func (s *Scene) judgeGrant(t *testing.T, g grantResult, told, faultAt time.Time) time.Time {
	t.Helper()
	switch {
	case g.at.IsZero():
		t.Errorf("B was not granted the lock within %v of the fault", Bound)
		return time.Time{}
	case g.err != nil:
		t.Errorf("B's acquisition: %v", g.err)
		return time.Time{}
	}
	if told.IsZero() || !told.Before(g.at) {
		t.Errorf("LOSS AFTER GRANT: B was granted the lock %s before A was told", lag(g.at, told, faultAt.Add(Bound)))
	}
	if g.token <= s.a.Token {
		t.Errorf("B's token %d, not above A's %d", g.token, s.a.Token)
	}
	err := g.release()
	released := time.Now()
	if err != nil && !errors.Is(err, zklock.ErrLockLost) {
		t.Errorf("B's release: %v", err)
	}
	return released
}

// lag says how long before b (or before end, if b never came) a came.
func lag(a, b, end time.Time) string {
	if b.IsZero() {
		return fmt.Sprintf("more than %v", end.Sub(a).Round(time.Millisecond))
	}
	return b.Sub(a).Round(time.Millisecond).String()
}

// Queue lists path on obs after a sync, so that it sees every write
// committed before.
func Queue(t testing.TB, obs *zk.Conn, path string) []string {
	t.Helper()
	if _, err := obs.Sync(path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	kids, _, err := obs.Children(path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	return kids
}

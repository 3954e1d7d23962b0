package zklock_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// A session with no lock keeps its lease proved while its connection lives
// (a sync every idle period, renew.go's idleEvery), so that a lock after a
// quiet spell is granted on its create's answer, waiting for no proof
// (LeaseStats.Waits). Before, a quiet session's first grant waited for one
// sync after its create's answer under Connect, and for a chain of its own
// across π under NewSession: one wait per quiet spell, and the drop-in's
// 3.6-s first Lock. Under Connect and NewSession; T = 4 s, spells of 3 s.
func TestQuietSessionGrantsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: three quiet spells of 3 s, about 18 s")
	}
	const timeout, spell, spells = 4 * time.Second, 3 * time.Second, 3
	for _, wrap := range []bool{false, true} {
		t.Run(map[bool]string{false: "Connect", true: "NewSession"}[wrap], func(t *testing.T) {
			var s *zklock.Session
			if wrap {
				conn, events, err := zk.Connect(zktest.Servers(t), timeout, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(conn.Close)
				if s, err = zklock.NewSession(conn, events, zklock.WithLogger(quietLog)); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
			} else {
				s = connect(t, zktest.Servers(t), zklock.WithSessionTimeout(timeout))
			}
			l := newLock(t, s, zktest.Path(t))
			ctx := ctxT(t, time.Minute)
			acquire := func() {
				t.Helper()
				h, err := l.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := h.Release(); err != nil {
					t.Fatal(err)
				}
			}
			acquire() // the path made, the first lease earned
			before := s.LeaseStats()
			for range spells {
				time.Sleep(spell)
				acquire()
			}
			st := s.LeaseStats()
			t.Logf("after %d quiet spells of %v: %+v (before: %+v)", spells, spell, st, before)
			if waits := st.Waits - before.Waits; waits > 0 {
				t.Errorf("%d of %d grants after a quiet spell waited for the lease to be proved", waits, spells)
			}
		})
	}
}

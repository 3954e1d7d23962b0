package zklock_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// What the lease counts as evidence, against a real server: only what the
// server did (docs/lease.md, "What a reply confirms").

// An AddAuth on a real connection (a caller's, through Session.Conn, as
// WithDigestAuth's at Dial and go-zookeeper's re-send at each reconnection)
// goes out with an ordinary xid and opcode 100; ZooKeeper answers it without
// touching the session. Its reply confirms no touch: the latest touch the
// tap records is still a packet written before the auth. Told apart by the
// Java client's xid alone, the auth's reply was taken for a touch of its
// own write (the ninth review's item 1), which a chain then carried past
// what the leader heard.
func TestAuthIsNoTouch(t *testing.T) {
	s := connect(t, zktest.Servers(t), zklock.WithSessionTimeout(20*time.Second)) // pings T/3 apart: none here
	type write struct {
		op int32
		at time.Time
	}
	var mu sync.Mutex
	var writes []write
	zklock.SetWriteHook(s, func(op int32, _ []byte) error {
		mu.Lock()
		writes = append(writes, write{op, time.Now()})
		mu.Unlock()
		return nil
	})
	defer zklock.SetWriteHook(s, nil)
	before, _ := zklock.LatestTouch(s)
	time.Sleep(20 * time.Millisecond) // past the tap's grain: a touch after this is a new one
	if err := s.Conn().AddAuth("digest", []byte("auth-is-no-touch:secret")); err != nil {
		t.Fatal(err)
	}
	latest, ok := zklock.LatestTouch(s)
	if !ok {
		t.Fatal("no touch recorded, not even the handshake")
	}
	mu.Lock()
	defer mu.Unlock()
	// The packet a touch dates is the last one whose hook ran before the
	// tap's write time (the hook runs just before the write begins).
	var dated *write
	for i := range writes {
		if !writes[i].at.After(latest) {
			dated = &writes[i]
		}
	}
	if dated != nil && dated.op == zklock.OpAuth {
		t.Fatalf("the auth's reply confirmed a touch of its own write, %v after the latest before it (writes %v)",
			latest.Sub(before), writes)
	}
	if len(writes) == 0 || writes[len(writes)-1].op != zklock.OpAuth {
		t.Fatalf("the auth was not the last packet written: %v", writes)
	}
}

// A reconnection in the same session to a member that grants a shorter
// timeout (members set apart mid-way through a rolling change of
// maxSessionTimeout): the leader's REVALIDATE re-arms the session's expiry
// with the new timeout, T2 after it. A, granted T1 = 10 s by member f1,
// holds the lock; its connection drops and it reconnects to f2, which
// grants T2 = 4 s; f2 is then cut from its peers (it keeps answering A's
// pings: syncLimit is long), the leader expires A T2 after the REVALIDATE,
// and B, on the leader, is granted the lock. A must be told first (under
// WithLossOnExpiryOnly, which keeps holds through the disconnection that
// f2's stalled syncs bring at 2T2/3, at most T2/8 after). The
// lease before the ninth review kept the deadline it had earned under T1
// (a touch + 7T1/8, only ever moved later): B was granted while A held
// (item 2). Under Connect and under NewSession alike.
func TestShorterTimeoutAtReconnection(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member ensemble")
	}
	const (
		T1, T2 = 10 * time.Second, 4 * time.Second
		tick   = 200 * time.Millisecond
	)
	// Member 0 grants at most T2, the others T1. At a first start the
	// member with the highest id leads (all zxids equal): member 0 follows.
	const f2 = 0
	c := zktest.Ensemble(t, 3, zkserver.WithPeerProxies(), zkserver.WithTickTime(tick),
		zkserver.WithSyncLimit(int(2*T1/tick)), zkserver.WithInitLimit(20),
		zkserver.WithSessionTimeouts(2*tick, T1), zkserver.WithMemberMaxSessionTimeout(f2, T2))
	ctx := zktest.Context(t, 4*time.Minute)
	var leader int
	zktest.Eventually(t, time.Minute, "a leader", func() bool {
		var err error
		leader, err = c.Leader(ctx)
		return err == nil
	})
	if leader == f2 {
		t.Fatalf("member %d leads: the scene needs it a follower", f2)
	}
	f1 := 3 - leader - f2
	for _, wrap := range []bool{false, true} {
		for _, expiryOnly := range []bool{false, true} {
			name := map[bool]string{false: "Connect", true: "NewSession"}[wrap] +
				map[bool]string{false: "/default", true: "/expiry only"}[expiryOnly]
			t.Run(name, func(t *testing.T) {
				r := shorterTimeoutScene(t, ctx, c, wrap, expiryOnly, leader, f1, f2, T1, T2)
				t.Log(r)
				// Under WithLossOnExpiryOnly the holder may be told up to T/8
				// after the next grant (lease.go's bounded overlap), and as
				// much again for a timer late on a loaded machine: the
				// deadline kept from T1 overlapped by seconds.
				var overlap time.Duration
				if expiryOnly {
					overlap = 2 * T2 / 8
				}
				switch {
				case r.bGranted.IsZero():
					t.Fatalf("B never granted: %s", r)
				case r.aLost.IsZero() || r.aLost.After(r.bGranted.Add(overlap)):
					t.Errorf("two holders: B granted at %s, A told lost at %s (granted %v at the reconnection; overlap allowed %v)",
						r.rel(r.bGranted), r.rel(r.aLost), T2, overlap)
				}
			})
		}
	}
	for _, wrap := range []bool{false, true} {
		name := map[bool]string{false: "Connect", true: "NewSession"}[wrap] + "/expiry only/answer withheld"
		t.Run(name, func(t *testing.T) {
			r := withheldAnswerScene(t, ctx, c, wrap, leader, f1, f2, T1, T2)
			t.Log(r)
			switch {
			case r.bGranted.IsZero():
				t.Fatalf("B never granted: %s", r)
			case r.aLost.IsZero() || r.aLost.After(r.bGranted.Add(2*T2/8)):
				t.Errorf("two holders: B granted at %s, A told lost at %s (T2 %v granted by an answer withheld; overlap allowed %v)",
					r.rel(r.bGranted), r.rel(r.aLost), T2, 2*T2/8)
			}
		})
	}
}

// shorterTimeoutScene plays TestShorterTimeoutAtReconnection's scene once:
// A's session made by Connect, or by NewSession over the test's own
// connection (wrap), its dials steered to f1 first, then to f2.
func shorterTimeoutScene(t *testing.T, ctx context.Context, c *zkserver.Cluster, wrap, expiryOnly bool,
	leader, f1, f2 int, T1, T2 time.Duration) sceneResult {
	var r sceneResult
	d := &steeredDialer{allow: c.Addr(f1)}
	a := steeredSession(t, d, []string{c.Addr(f1), c.Addr(f2)}, wrap, expiryOnly, T1)
	b := connect(t, []string{c.Addr(leader)}, zklock.WithSessionTimeout(T2))
	path := zktest.Path(t)
	la, lb := newLock(t, a, path), newLock(t, b, path)
	eventually(t, 10*time.Second, "A granted T1", func() bool { return a.LeaseStats().Timeout == T1 })
	// A's lease renewed under T1: its first lock and release, then quiet.
	if h, err := la.Acquire(ctx); err != nil {
		t.Fatal(err)
	} else if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	d.moveTo(c.Addr(f2), false) // the connection to f1 drops; A reconnects to f2, in the same session
	eventually(t, 30*time.Second, "A on f2, in the same session", func() bool {
		return a.Conn().Server() == c.Addr(f2) && a.Conn().State() == zk.StateHasSession
	})
	eventually(t, 10*time.Second, "A granted T2", func() bool { return a.LeaseStats().Timeout == T2 })
	h, err := la.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Release() }()
	if err := c.PartitionMember(f2); err != nil {
		t.Fatal(err)
	}
	r.stalled = time.Now()
	defer func() { _ = c.HealMember(f2) }()
	r.bGrantedALost(t, ctx, lb, h, T1+T2)
	return r
}

// bGrantedALost notes when B's acquisition through lb was granted and when
// A's hold h was told lost, each within d (zero: not then).
func (r *sceneResult) bGrantedALost(t *testing.T, ctx context.Context, lb *zklock.Lock, h *zklock.Hold, d time.Duration) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		bCtx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		if hb, err := lb.Acquire(bCtx); err == nil {
			r.bGranted = time.Now()
			_ = hb.Release()
		}
	}()
	select {
	case <-h.Lost():
		r.aLost = time.Now()
	case <-time.After(d):
	}
	zktest.Wait(t, "B's acquisition", &wg)
}

// steeredSession makes A's session with timeout T, by Connect or by
// NewSession over the test's own connection (wrap), dialing through d.
func steeredSession(t *testing.T, d *steeredDialer, servers []string, wrap, expiryOnly bool, T time.Duration) *zklock.Session {
	t.Helper()
	opts := []zklock.SessionOption{zklock.WithSessionTimeout(T), zklock.WithLogger(quietLog)}
	if expiryOnly {
		opts = append(opts, zklock.WithLossOnExpiryOnly())
	}
	if !wrap {
		return connect(t, servers, append(opts, zklock.WithDialer(d.dial))...)
	}
	conn, events, err := zk.Connect(servers, T, zk.WithDialer(d.dial), zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	a, err := zklock.NewSession(conn, events, append(opts, zklock.WithTestHooks())...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// steeredDialer dials only the one address it allows: the others are
// refused, so that go-zookeeper moves on to it. moveTo allows another and
// closes the connection made to the one before; asked to, it withholds
// what the server sends on the next connection (withheld), and refuses
// every dial after it.
type steeredDialer struct {
	mu       sync.Mutex
	allow    string
	withhold bool
	conn     net.Conn
}

func (d *steeredDialer) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if address != d.allow {
		return nil, fmt.Errorf("steered away from %s (the test allows %s)", address, d.allow)
	}
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	d.conn = c
	if d.withhold {
		d.allow, d.withhold = "", false // one such connection, and no more
		return withheld{c}, nil
	}
	return c, nil
}

func (d *steeredDialer) moveTo(addr string, withhold bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.allow, d.withhold = addr, withhold
	if d.conn != nil {
		d.conn.Close()
	}
}

// withheld is a connection whose reads see nothing the server sends (its
// connect answer first): they read and drop it until the connection fails
// or its read deadline passes.
type withheld struct{ net.Conn }

func (w withheld) Read(b []byte) (int, error) {
	for {
		if _, err := w.Conn.Read(b); err != nil {
			return 0, err
		}
	}
}

package session

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zkserver"
)

// The honesty rule: what the lease explorer's double claims of ZooKeeper
// and of go-zookeeper v1.0.4, held against a real server, through a fault
// proxy in front of the client, and a 3-member ensemble whose follower is
// cut from its leader through the peer proxies (about 15 s in all; with
// -lease.long every case runs 3 times). Each
// case names the double's claim it checks; the timing bounds are the
// claims' (expiry no earlier than T after the last touch, a drop no
// earlier than 2T/3 after the last byte), with generous slack only on the
// side the double does not depend on.

var leaseLong = flag.Bool("lease.long", false, "TestLeaseConformance: every case 3 times")

// conformT is the session timeout the cases ask for (within the servers'
// bounds at their 200 ms tick).
const conformT = 2 * time.Second

// TestLeaseConformance runs the double's claims against a standalone
// server and an ensemble.
func TestLeaseConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a ZooKeeper server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := zkserver.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rounds := 1
	if *leaseLong {
		rounds = 3
	}
	for i := range rounds {
		t.Run(fmt.Sprint("silent client/", i), func(t *testing.T) { conformSilent(t, c.Addr(0)) })
		t.Run(fmt.Sprint("read deadline/", i), func(t *testing.T) { conformReadDeadline(t, c.Addr(0)) })
		t.Run(fmt.Sprint("follower cut from the leader/", i), conformFollowerCut)
	}
	t.Run("negotiation", conformNegotiation)
	t.Run("auth answered untouched", func(t *testing.T) { conformAuth(t, c.Addr(0)) })
}

// conformNegotiation: a server with ZooKeeper's default bounds grants a
// session between 2 and 20 of its ticks, whatever was asked, and the tap
// reads what it granted from the connect answer: the double's connect
// answers carry the granted timeout, and the floor's bounds derive from it.
func conformNegotiation(t *testing.T) {
	const tick = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := zkserver.Start(ctx, zkserver.WithTickTime(tick), zkserver.WithSessionTimeouts(2*tick, 20*tick))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, x := range []struct{ asked, granted time.Duration }{
		{100 * time.Millisecond, 2 * tick}, {2 * time.Second, 2 * time.Second}, {10 * time.Second, 20 * tick},
	} {
		f, err := Dial(ctx, []string{c.Addr(0)}, "", Config{Timeout: x.asked, Logger: slog.New(slog.DiscardHandler),
			MaxRetryWait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		h, ok := f.tap.LastHandshake()
		if got := f.Lease().Timeout(); got != x.granted || !ok || h.Timeout != x.granted {
			t.Errorf("asked %v: the floor counts from %v, the handshake %+v; the server grants %v", x.asked, got, h, x.granted)
		}
		f.Close()
	}
}

// client is a go-zookeeper connection with its session events, in order.
type conformClient struct {
	*zk.Conn
	mu     sync.Mutex
	events []conformEvent
}

type conformEvent struct {
	at    time.Time
	state zk.State
	sid   int64
}

// dialConform connects to addr with the cases' session timeout.
func dialConform(t *testing.T, addr string) *conformClient {
	t.Helper()
	cc := &conformClient{}
	conn, _, err := zk.Connect([]string{addr}, conformT, zk.WithLogInfo(false), zk.WithLogger(quietZK{}),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type != zk.EventSession {
				return
			}
			cc.mu.Lock()
			cc.events = append(cc.events, conformEvent{at: time.Now(), state: ev.State, sid: cc.sessionID()})
			cc.mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	cc.mu.Lock()
	cc.Conn = conn
	cc.mu.Unlock()
	t.Cleanup(conn.Close)
	waitFor(t, 10*time.Second, "a session", func() bool { return conn.State() == zk.StateHasSession })
	return cc
}

func (cc *conformClient) sessionID() int64 {
	if cc.Conn == nil {
		return 0
	}
	return cc.Conn.SessionID()
}

// seen returns the events at or after since.
func (cc *conformClient) seen(since time.Time) []conformEvent {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	var out []conformEvent
	for _, e := range cc.events {
		if !e.at.Before(since) {
			out = append(out, e)
		}
	}
	return out
}

// first is the first event of state st at or after since (zero: none).
func (cc *conformClient) first(st zk.State, since time.Time) time.Time {
	for _, e := range cc.seen(since) {
		if e.state == st {
			return e.at
		}
	}
	return time.Time{}
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// proxied returns a fault proxy in front of addr, closed with the test.
func proxied(t *testing.T, addr string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no %s within %v", what, d)
		}
	}
}

// watchGone returns a channel closed when path is deleted, as another
// session sees it.
func watchGone(t *testing.T, obs *conformClient, path string) <-chan time.Time {
	t.Helper()
	_, _, ch, err := obs.GetW(path)
	if err != nil {
		t.Fatal(err)
	}
	gone := make(chan time.Time, 1)
	go func() {
		ev := <-ch
		if ev.Type == zk.EventNodeDeleted {
			gone <- time.Now()
		}
		close(gone)
	}()
	return gone
}

// conformSilent checks, the client's traffic lost (the server's arriving):
//   - the leader expires the session no earlier than T after the last
//     request that reached it (the double's E = lastHeard + T, the
//     earliest);
//   - a sync and a write sent meanwhile do not succeed;
//   - the client learns of the expiry only once it reconnects
//     (StateExpired, then a new session); until then SessionID is the old
//     one.
func conformSilent(t *testing.T, addr string) {
	p := proxied(t, addr)
	a, obs := dialConform(t, p.Addr()), dialConform(t, addr)
	path := fmt.Sprintf("/lease-conformance-%d", time.Now().UnixNano())
	if _, err := a.Create(path, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	gone := watchGone(t, obs, path)
	old := a.SessionID()
	sent := time.Now()
	if _, err := a.Sync("/"); err != nil {
		t.Fatal(err)
	}
	p.BlockUpstream()
	blocked := time.Now()
	type result struct {
		what string
		err  error
	}
	results := make(chan result, 2)
	go func() { _, err := a.Sync("/"); results <- result{"sync", err} }()
	go func() {
		_, err := a.Create(path+"-late", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		results <- result{"create", err}
	}()
	var at time.Time
	select {
	case at = <-gone:
	case <-time.After(4 * conformT):
		t.Fatalf("the session's node still there %v after its traffic stopped", 4*conformT)
	}
	if at.Sub(sent) < conformT {
		t.Errorf("the session expired %v after its last request was sent: before T = %v", at.Sub(sent), conformT)
	}
	t.Logf("expired %v after the last request (T %v), %v after the traffic stopped", at.Sub(sent).Round(time.Millisecond), conformT, at.Sub(blocked).Round(time.Millisecond))
	for range 2 {
		if r := <-results; r.err == nil {
			t.Errorf("a %s sent after the traffic stopped succeeded", r.what)
		} else {
			t.Logf("the %s sent after the traffic stopped: %v", r.what, r.err)
		}
	}
	if slices.ContainsFunc(a.seen(blocked), func(e conformEvent) bool { return e.state == zk.StateExpired }) || a.SessionID() != old {
		t.Errorf("the client learnt of the expiry before it reconnected: %v, session %#x (was %#x)", a.seen(blocked), a.SessionID(), old)
	}
	p.UnblockUpstream()
	healed := time.Now()
	waitFor(t, 4*conformT, "new session", func() bool { return a.SessionID() != old && a.State() == zk.StateHasSession })
	exp, has := a.first(zk.StateExpired, healed), a.first(zk.StateHasSession, healed)
	if exp.IsZero() || has.Before(exp) {
		t.Errorf("on reconnecting, want StateExpired then a new session: %v", a.seen(healed))
	}
	if ok, _, err := obs.Exists(path + "-late"); ok || err != nil {
		t.Errorf("the create sent after the traffic stopped was applied (%v, %v)", ok, err)
	}
}

// conformReadDeadline checks that a client that receives nothing drops its
// connection 2T/3 after the last byte it received, not earlier (the
// double's read deadline).
func conformReadDeadline(t *testing.T, addr string) {
	p := proxied(t, addr)
	a := dialConform(t, p.Addr())
	if _, err := a.Sync("/"); err != nil {
		t.Fatal(err)
	}
	last := time.Now()
	p.Pause()
	paused := time.Now()
	defer p.Resume()
	var down time.Time
	waitFor(t, 2*conformT, "drop", func() bool { down = a.first(zk.StateDisconnected, paused); return !down.IsZero() })
	deadline := conformT * 2 / 3
	t.Logf("dropped %v after the last answer (2T/3 = %v)", down.Sub(last).Round(time.Millisecond), deadline)
	if down.Sub(last) < deadline {
		t.Errorf("dropped %v after the last byte received, before 2T/3 = %v", down.Sub(last), deadline)
	}
	if down.Sub(paused) > deadline+conformT/3 {
		t.Errorf("dropped %v after the server fell silent: long after 2T/3 = %v", down.Sub(paused), deadline)
	}
}

// conformFollowerCut checks, on a 3-member ensemble whose client is on a
// follower cut from the leader (syncLimit × tickTime > T):
//   - the follower keeps answering an idle client's pings: the client
//     stays connected while the leader expires its session;
//   - a sync sent then does not succeed: the link healed, the leader
//     refuses it (or the connection closes with the session), and the
//     client learns of the expiry as it reconnects;
//   - with a sync waiting at the cut follower, its replies wait behind it
//     (ZooKeeper's CommitProcessor keeps a session's requests in order):
//     the client receives nothing and drops 2T/3 after its last byte.
func conformFollowerCut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const tick = 200 * time.Millisecond
	c, err := zkserver.StartEnsemble(ctx, 3, zkserver.WithPeerProxies(), zkserver.WithTickTime(tick),
		zkserver.WithSyncLimit(int(3*conformT/tick)), zkserver.WithInitLimit(20))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var leader int
	waitFor(t, time.Minute, "leader", func() bool { leader, err = c.Leader(ctx); return err == nil })
	f := (leader + 1) % 3
	a, obs := dialConform(t, c.Addr(f)), dialConform(t, c.Addr(leader))
	path := fmt.Sprintf("/lease-conformance-%d", time.Now().UnixNano())
	if _, err := a.Create(path, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	gone := watchGone(t, obs, path)
	old := a.SessionID()
	cut := cutFollower(t, c, f)
	select {
	case <-gone:
	case <-time.After(3 * conformT):
		t.Fatal("the leader did not expire the session of the cut follower's client")
	}
	if d := a.first(zk.StateDisconnected, cut); !d.IsZero() {
		t.Errorf("the idle client on the cut follower dropped %v after the cut: its pings went unanswered", d.Sub(cut))
	}
	synced := make(chan error, 1)
	go func() { _, err := a.Sync("/"); synced <- err }()
	time.Sleep(50 * time.Millisecond)
	healed := healFollower(t, c, f)
	if err := <-synced; err == nil {
		t.Error("a sync sent on the cut follower after the leader expired the session succeeded")
	} else {
		t.Logf("the sync sent after the expiry, the link healed: %v", err)
	}
	waitFor(t, 4*conformT, "new session", func() bool { return a.SessionID() != old && a.State() == zk.StateHasSession })
	if exp := a.first(zk.StateExpired, healed); exp.IsZero() {
		t.Errorf("the client got a new session without StateExpired: %v", a.seen(healed))
	}
	waitFor(t, time.Minute, "the follower back", func() bool { m, err := c.Mode(ctx, f); return err == nil && m == "follower" })
	if _, err := a.Sync("/"); err != nil {
		t.Fatal(err)
	}
	cutFollower(t, c, f)
	asked := time.Now()
	go func() { _, err := a.Sync("/"); synced <- err }()
	var down time.Time
	waitFor(t, 2*conformT, "drop behind the waiting sync", func() bool { down = a.first(zk.StateDisconnected, asked); return !down.IsZero() })
	t.Logf("with a sync waiting, dropped %v after it was sent (2T/3 = %v)", down.Sub(asked).Round(time.Millisecond), conformT*2/3)
	healFollower(t, c, f)
	if err := <-synced; err == nil {
		t.Error("the sync the cut follower held succeeded after the client dropped")
	}
}

func cutFollower(t *testing.T, c *zkserver.Cluster, f int) time.Time {
	t.Helper()
	if err := c.PartitionMember(f); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

func healFollower(t *testing.T, c *zkserver.Cluster, f int) time.Time {
	t.Helper()
	if err := c.HealMember(f); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

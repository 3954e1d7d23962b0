package tier_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

var anyone = zk.WorldACL(zk.PermAll)

// events records an observer's events of one kind.
type events struct {
	mu  sync.Mutex
	got []tier.Event
}

func (e *events) observe(ev tier.Event) {
	e.mu.Lock()
	e.got = append(e.got, ev)
	e.mu.Unlock()
}

func (e *events) of(k tier.EventKind) []tier.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []tier.Event
	for _, ev := range e.got {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// dataDir creates a persistent directory for the transactions to write in.
func dataDir(t *testing.T, s *zklock.Session) string {
	t.Helper()
	dir := zktest.Path(t) + "-data"
	mkdirs(t, s.Conn(), dir)
	return dir
}

// landed reports whether path exists, as the leader sees it.
func landed(t *testing.T, conn *zk.Conn, path string) bool {
	t.Helper()
	// The observer's own connection can fail under load (a request cut
	// by its reconnect: "zk: connection closed", once in TestNemesisTxn):
	// that says nothing about the write, so ask again, for a while.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := conn.Sync("/")
		var ok bool
		if err == nil {
			ok, _, err = conn.Exists(path)
		}
		if err == nil {
			return ok
		}
		if time.Now().After(deadline) {
			t.Fatalf("the observer could not read %s: %v", path, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestTxnTier(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	dir := dataDir(t, s)
	var ev events
	l := newLock(t, s, zktest.Path(t), tier.WithObserver(ev.observe))
	ctx := ctxT(t, 20*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A context derived from held (a deadline) carries the hold too.
	dctx, cancel := context.WithTimeout(held, 10*time.Second)
	defer cancel()
	res, err := l.Txn(dctx, &zk.CreateRequest{Path: dir + "/a", Data: []byte("1"), Acl: anyone})
	if err != nil || len(res) != 1 || res[0].String != dir+"/a" {
		t.Fatalf("Txn: %v, %v", res, err)
	}
	// Reentrant holds share the hold.
	if _, err := l.Acquire(held); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Txn(held, &zk.SetDataRequest{Path: dir + "/a", Data: []byte("2"), Version: 0}); err != nil {
		t.Fatal(err)
	}
	var oe *tier.OpError
	if _, err := l.Txn(held, &zk.SetDataRequest{Path: dir + "/a", Version: 0}); !errors.As(err, &oe) || oe.Index != 0 || !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("Txn with a stale version: %v, want *tier.OpError wrapping zk.ErrBadVersion", err)
	}
	if n := len(ev.of(tier.TxnFailed)); n != 0 {
		t.Fatalf("%d TxnFailed events for a hold that is current", n)
	}
	for range 2 {
		if err := l.Release(held); err != nil {
			t.Fatal(err)
		}
	}
	_, err = l.Txn(held, &zk.DeleteRequest{Path: dir + "/a", Version: -1})
	if !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("Txn after Release: %v, want ErrNotHolder", err)
	}
	if got := ev.of(tier.TxnFailed); len(got) != 1 || !errors.Is(got[0].Err, tier.ErrNotHolder) {
		t.Fatalf("TxnFailed events %+v, want one with ErrNotHolder", got)
	}
	if !landed(t, s.Conn(), dir+"/a") {
		t.Fatal("the delete sent after Release landed")
	}
}

// Under WithHandoff the next local holder rides on the same node, so the
// server's check cannot refuse the previous holder's write: tier must.
func TestTxnHandoffRefusesPreviousHolder(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	dir := dataDir(t, s)
	var ev events
	l := newLock(t, s, zktest.Path(t), tier.WithHandoff(10, time.Minute), tier.WithObserver(ev.observe))
	ctx := ctxT(t, 20*time.Second)
	first, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := l.Token(first)
	next := make(chan context.Context, 1)
	go func() {
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		next <- h
	}()
	waitingAtGate(t, l)
	if err := l.Release(first); err != nil {
		t.Fatal(err)
	}
	second := <-next
	if second == nil {
		t.FailNow()
	}
	if tok2, _ := l.Token(second); tok2 != tok {
		t.Fatalf("no hand-off: tokens %d then %d", tok, tok2)
	}
	_, err = l.Txn(first, &zk.CreateRequest{Path: dir + "/previous", Acl: anyone})
	if !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("previous holder's Txn: %v, want ErrNotHolder", err)
	}
	if landed(t, s.Conn(), dir+"/previous") {
		t.Fatal("the previous local holder's write landed under the next holder")
	}
	if got := ev.of(tier.TxnFailed); len(got) != 1 {
		t.Fatalf("TxnFailed events %+v, want one", got)
	}
	if _, err := l.Txn(second, &zk.CreateRequest{Path: dir + "/current", Acl: anyone}); err != nil {
		t.Fatalf("current holder's Txn: %v", err)
	}
	if err := l.Release(second); err != nil {
		t.Fatal(err)
	}
}

// waitingAtGate waits until a goroutine waits at l's gate.
func waitingAtGate(t *testing.T, l *tier.Lock) {
	t.Helper()
	eventually(t, 10*time.Second, "a waiter at the gate", func() bool { return tier.GateWaiters(l) == 1 })
}

// A guarded write still in flight when its hold is handed on must be over
// before the next local holder gets the hold: otherwise it could land
// under that holder, on the node they share. A paused proxy keeps the
// write's request out; the Txn gives up at its deadline (outcome unknown)
// and the holder releases with a local waiter: the hand-off must wait for
// the request, which lands once the proxy resumes.
func TestTxnHandoffWaitsForWriteInFlight(t *testing.T) {
	servers := zktest.Servers(t)
	px := nemProxy(t, servers[0])
	// Keep the hold through the pause (the lease would end it after a
	// quarter of the timeout otherwise): the point is a hand-off.
	s := connect(t, []string{px.Addr()}, zklock.WithLossOnExpiryOnly())
	obs := connect(t, servers)
	dir := dataDir(t, obs)
	var ev events
	l := newLock(t, s, zktest.Path(t), tier.WithHandoff(10, time.Minute), tier.WithObserver(ev.observe))
	ctx := ctxT(t, 30*time.Second)
	first, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type grant struct {
		held     context.Context
		wroteYet bool
	}
	next := make(chan grant, 1)
	go func() {
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Error(err)
			next <- grant{}
			return
		}
		// Looked at first thing after the grant: was the previous
		// holder's write over by then?
		ok, _, _ := obs.Conn().Exists(dir + "/inflight")
		next <- grant{h, ok}
	}()
	waitingAtGate(t, l)
	px.Pause()
	tctx, cancel := context.WithTimeout(first, 100*time.Millisecond)
	_, err = l.Txn(tctx, &zk.CreateRequest{Path: dir + "/inflight", Acl: anyone})
	cancel()
	if !errors.Is(err, tier.ErrOutcomeUnknown) {
		px.Resume()
		t.Fatalf("Txn through a paused proxy: %v, want ErrOutcomeUnknown", err)
	}
	released := make(chan error, 1)
	go func() { released <- l.Release(first) }()
	time.Sleep(200 * time.Millisecond) // the hand-off, were it not waiting, would be done by now
	px.Resume()
	g := <-next
	if g.held == nil {
		t.FailNow()
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if !g.wroteYet {
		t.Fatal("the next local holder got the hold before the previous holder's write in flight was over")
	}
	if tier.TierHandoff != ev.of(tier.Acquired)[1].Tier {
		t.Fatalf("second acquisition by %v, want a hand-off", ev.of(tier.Acquired)[1].Tier)
	}
	if err := l.Release(g.held); err != nil {
		t.Fatal(err)
	}
}

func TestTxnRegistry(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	dir := dataDir(t, s)
	r, err := tier.NewRegistry(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := ctxT(t, 20*time.Second)
	held, err := r.Acquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Txn(held, &zk.CreateRequest{Path: dir + "/job", Acl: anyone}); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(held); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Txn(held, &zk.DeleteRequest{Path: dir + "/job", Version: -1}); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("Txn after the key's release: %v, want ErrNotHolder", err)
	}
	if _, err := r.Txn(ctx, &zk.DeleteRequest{Path: dir + "/job", Version: -1}); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("Txn with a context that never held: %v", err)
	}
}

func TestTxnTierBadInput(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	l := newLock(t, s, zktest.Path(t))
	ctx := ctxT(t, 20*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(held)
	var nl *tier.Lock
	var nr *tier.Registry
	r, err := tier.NewRegistry(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	closed := newLock(t, s, zktest.Path(t))
	ch, err := closed.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	r.Close()
	for _, c := range []struct {
		name string
		call func() error
		want error
	}{
		{"nil lock", func() error { _, err := nl.Txn(held); return err }, tier.ErrNil},
		{"nil registry", func() error { _, err := nr.Txn(held); return err }, tier.ErrNil},
		//lint:ignore SA1012 a nil context is the bad input under test
		{"nil context", func() error { _, err := l.Txn(nil); return err }, tier.ErrNilContext}, //nolint:staticcheck
		//lint:ignore SA1012 a nil context is the bad input under test
		{"nil context, registry", func() error { _, err := r.Txn(nil); return err }, tier.ErrNilContext}, //nolint:staticcheck
		{"foreign context", func() error { _, err := l.Txn(ctx); return err }, tier.ErrNotHolder},
		{"closed lock", func() error { _, err := closed.Txn(ch); return err }, tier.ErrClosed},
		{"closed registry", func() error { _, err := r.Txn(ctx); return err }, tier.ErrNotHolder},
		{"nil op", func() error { _, err := l.Txn(held, nil); return err }, tier.ErrInvalidOp},
		{"bad path", func() error { _, err := l.Txn(held, &zk.DeleteRequest{Path: "rel"}); return err }, tier.ErrInvalidPath},
		{"ended derived context", func() error {
			d, cancel := context.WithCancel(held)
			cancel()
			_, err := l.Txn(d, &zk.CreateRequest{Path: "/x", Acl: anyone})
			return err
		}, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := zktest.NoPanic(t, c.call); !errors.Is(err, c.want) {
				t.Fatalf("%v, want %v", err, c.want)
			}
		})
	}
	if held.Err() != nil {
		t.Fatal("bad input ended the hold")
	}
}

func TestEventKindTxnFailedString(t *testing.T) {
	if got := tier.TxnFailed.String(); got != "txn-failed" {
		t.Fatalf("TxnFailed.String() = %q", got)
	}
}

// A short stress: two sessions (two processes, as far as ZooKeeper is
// concerned), one with hand-off, several goroutines each, every holder
// reading a counter and writing it back through Txn with the version it
// read. Under mutual exclusion no write meets a version conflict and the
// counter ends equal to the writes that succeeded.
func TestTxnStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress")
	}
	const goroutines, rounds = 4, 40
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	counter := path + "-counter"
	admin := connect(t, servers)
	mkdirs(t, admin.Conn(), counter)
	s0, s1 := connect(t, servers), connect(t, servers)
	locks := []*tier.Lock{
		newLock(t, s0, path),
		newLock(t, s1, path, tier.WithHandoff(4, 50*time.Millisecond)),
	}
	sessions := []*zk.Conn{s0.Conn(), s1.Conn()}
	ctx := ctxT(t, 60*time.Second)
	var (
		mu        sync.Mutex
		writes    int
		conflicts int
		wg        sync.WaitGroup
	)
	for i, l := range locks {
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					held, err := l.Acquire(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					conn := sessions[i]
					_, _ = conn.Sync(counter)
					data, stat, err := conn.Get(counter)
					if err == nil {
						n := len(data)
						_, err = l.Txn(held, &zk.SetDataRequest{Path: counter, Data: make([]byte, n+1), Version: stat.Version})
					}
					mu.Lock()
					switch {
					case err == nil:
						writes++
					case errors.Is(err, zk.ErrBadVersion):
						conflicts++
					default:
						t.Error(err)
					}
					mu.Unlock()
					if err := l.Release(held); err != nil {
						t.Error(err)
					}
				}
			}()
		}
	}
	zktest.Wait(t, "the goroutines", &wg)
	data, _, err := admin.Conn().Get(counter)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d guarded writes, %d version conflicts, counter %d", writes, conflicts, len(data))
	if conflicts != 0 || len(data) != writes || writes != 2*goroutines*rounds {
		t.Fatalf("%d conflicts, counter %d, %d writes of %d", conflicts, len(data), writes, 2*goroutines*rounds)
	}
}

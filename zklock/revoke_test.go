package zklock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

var isClosed = zktest.IsClosed

func waitClosed(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("%s: %v", what, ctx.Err())
	}
}

// A revocation request reaches the holder through Revoked and changes
// nothing else: the hold stays valid until the holder releases, and the
// queue shows the request.
func TestRevokeHolder(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	l := newLock(t, connect(t, servers), p, zklock.WithRevocable())
	rs := connect(t, servers)
	ctx := ctxT(t, 20*time.Second)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rv := h.Revoked()
	if rv == nil || isClosed(rv) {
		t.Fatalf("Revoked() = %v before any request", rv)
	}
	node, err := zklock.RevokeHolder(ctx, rs, p)
	if err != nil || node != h.Node() {
		t.Fatalf("RevokeHolder = %q, %v; holder %q", node, err, h.Node())
	}
	waitClosed(t, ctx, rv, "revocation not delivered")
	if isClosed(h.Lost()) || h.Err() != nil {
		t.Fatalf("a revocation ended the hold: %v", h.Err())
	}
	ps, err := l.Participants(ctx)
	if err != nil || len(ps) != 1 || !ps[0].Revoked || string(ps[0].Data) != zklock.RevokeMessage || !ps[0].Holder {
		t.Fatalf("Participants = %+v, %v", ps, err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	// The request belonged to that hold: the next one starts afresh.
	h, err = l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "own-node watch armed", func() bool { return watchersOf(t, h.Node()) == 1 })
	if isClosed(h.Revoked()) {
		t.Fatal("the next hold was born revoked")
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

// othersNode returns the one child of p that is not mine.
func othersNode(t *testing.T, conn *zk.Conn, p, mine string) string {
	t.Helper()
	for _, c := range children(t, conn, p) {
		if p+"/"+c != mine {
			return p + "/" + c
		}
	}
	t.Fatalf("no other node than %s under %s", mine, p)
	return ""
}

// A request written while our node still waits is seen once it leads: the
// data stays on the node, and the first read of the holder's own-node
// watch finds it.
func TestRevokeWhileQueued(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	a := newLock(t, connect(t, servers), p)
	bs := connect(t, servers)
	b := newLock(t, bs, p, zklock.WithRevocable())
	rs := connect(t, servers)
	ctx := ctxT(t, 20*time.Second)
	ah, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := goAcquire(ctx, b)
	eventually(t, 5*time.Second, "b queued", func() bool { return len(children(t, rs.Conn(), p)) == 2 })
	bNode := othersNode(t, rs.Conn(), p, ah.Node())
	if err := zklock.RevokeNode(ctx, rs, bNode); err != nil {
		t.Fatal(err)
	}
	if err := ah.Release(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	bh := r.h
	if bh.Node() != bNode {
		t.Fatalf("b holds %s, queued %s", bh.Node(), bNode)
	}
	waitClosed(t, ctx, bh.Revoked(), "a request written while queued was not delivered")
	if err := bh.Release(); err != nil {
		t.Fatal(err)
	}
}

// A waiter watches its predecessor with a data watch, so a revocation of
// the holder fires it too: the waiter must look again and keep its place
// (same node, still waiting), and get the lock when the holder releases.
func TestRevokePredecessorWatch(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	a := newLock(t, connect(t, servers), p, zklock.WithRevocable())
	bs := connect(t, servers)
	b := newLock(t, bs, p)
	rs := connect(t, servers)
	ctx := ctxT(t, 20*time.Second)
	ah, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := goAcquire(ctx, b)
	// Both watch a's node: a its own, b its predecessor.
	eventually(t, 5*time.Second, "b waits on a", func() bool { return watchersOf(t, ah.Node()) == 2 })
	bNode := othersNode(t, rs.Conn(), p, ah.Node())
	gets := zklock.WatchRequests(bs)
	if err := zklock.RevokeNode(ctx, rs, ah.Node()); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, ctx, ah.Revoked(), "revocation not delivered")
	// b's watch fired and b re-armed it (a second watch request), and so did a.
	eventually(t, 5*time.Second, "b re-armed its watch", func() bool {
		return len(done) > 0 || zklock.WatchRequests(bs) > gets && watchersOf(t, ah.Node()) == 2
	})
	select {
	case r := <-done:
		t.Fatalf("b's acquisition ended while a holds: %v, %v", r.h, r.err)
	default:
	}
	if c := children(t, rs.Conn(), p); len(c) != 2 || othersNode(t, rs.Conn(), p, ah.Node()) != bNode {
		t.Fatalf("queue %v: b's node %s did not keep its place", c, bNode)
	}
	if err := ah.Release(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	bh := r.h
	if bh.Node() != bNode || isClosed(bh.Lost()) {
		t.Fatalf("b holds %s (queued %s), lost %v", bh.Node(), bNode, bh.Err())
	}
	if err := bh.Release(); err != nil {
		t.Fatal(err)
	}
}

// Without WithRevocable a request is written (it is data on the node) but
// the holder is not told: Revoked is nil, and the hold goes on. The
// request is written once the hold's own-node watch is armed (after the
// lease's bound, for a hold that is not revocable), so that it fires it.
func TestRevokeNotRevocable(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	s := connect(t, servers)
	l := newLock(t, s, p)
	ctx := ctxT(t, 20*time.Second)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rv := h.Revoked(); rv != nil {
		t.Fatalf("Revoked() = %v on a lock made without WithRevocable", rv)
	}
	eventually(t, 10*time.Second, "own-node watch armed", func() bool { return watchersOf(t, h.Node()) == 1 })
	gets := zklock.Written(s, zklock.OpGetData)
	if _, err := zklock.RevokeHolder(ctx, connect(t, servers), p); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "own-node watch re-armed", func() bool {
		return zklock.Written(s, zklock.OpGetData) > gets && watchersOf(t, h.Node()) == 1
	})
	if h.Err() != nil || h.Revoked() != nil {
		t.Fatalf("err %v, Revoked %v", h.Err(), h.Revoked())
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

// A revocation of a node that is gone, or of a path nobody holds, is a
// clear error, not a silent success (Curator's attemptRevoke ignores it).
func TestRevokeGone(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	s := connect(t, servers)
	l := newLock(t, s, p)
	ctx := ctxT(t, 20*time.Second)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := h.Node()
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "node deleted", func() bool { return len(children(t, s.Conn(), p)) == 0 })
	err = zklock.RevokeNode(ctx, s, node)
	if !errors.Is(err, zklock.ErrNodeNotFound) || !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("RevokeNode of a released node: %v", err)
	}
	if _, err := zklock.RevokeHolder(ctx, s, p); !errors.Is(err, zklock.ErrNoHolder) {
		t.Fatalf("RevokeHolder of an empty path: %v", err)
	}
	if _, err := zklock.RevokeHolder(ctx, s, p+"/never/made"); !errors.Is(err, zklock.ErrNoHolder) {
		t.Fatalf("RevokeHolder of a missing path: %v", err)
	}
}

func TestRevokeBadInput(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers)
	closed := connect(t, servers)
	closed.Close()
	ctx := ctxT(t, 10*time.Second)
	good := "/revoke/x/_c_0f0f0f0f-0000-4000-8000-000000000000-lock-0000000001"
	for _, tc := range []struct {
		name string
		ctx  context.Context
		s    *zklock.Session
		node string
		want error
	}{
		{"nil context", nil, s, good, zklock.ErrNilContext},
		{"nil session", ctx, nil, good, zklock.ErrNilSession},
		{"closed session", ctx, closed, good, zklock.ErrSessionClosed},
		{"empty", ctx, s, "", zklock.ErrInvalidPath},
		{"relative", ctx, s, "a/x-lock-0000000001", zklock.ErrInvalidPath},
		{"root", ctx, s, "/", zklock.ErrInvalidPath},
		{"top level", ctx, s, "/x-lock-0000000001", zklock.ErrInvalidPath},
		{"trailing slash", ctx, s, good + "/", zklock.ErrInvalidPath},
		{"not a lock node", ctx, s, "/revoke/x/config", zklock.ErrInvalidPath},
		{"bad sequence", ctx, s, "/revoke/x/_c_a-lock-12a", zklock.ErrInvalidPath},
		{"reserved", ctx, s, "/zookeeper/_c_a-lock-0000000001", zklock.ErrInvalidPath},
		{"cancelled", zktest.Cancelled(), s, good, context.Canceled},
	} {
		t.Run("node/"+tc.name, func(t *testing.T) {
			err := zktest.NoPanic(t, func() error { return zklock.RevokeNode(tc.ctx, tc.s, tc.node) })
			if !errors.Is(err, tc.want) {
				t.Fatalf("RevokeNode(%q) = %v, want %v", tc.node, err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		s    *zklock.Session
		path string
		want error
	}{
		{"nil context", nil, s, "/revoke/x", zklock.ErrNilContext},
		{"nil session", ctx, nil, "/revoke/x", zklock.ErrNilSession},
		{"closed session", ctx, closed, "/revoke/x", zklock.ErrSessionClosed},
		{"empty", ctx, s, "", zklock.ErrInvalidPath},
		{"relative", ctx, s, "revoke/x", zklock.ErrInvalidPath},
		{"root", ctx, s, "/", zklock.ErrInvalidPath},
		{"dot segment", ctx, s, "/revoke/../x", zklock.ErrInvalidPath},
		{"cancelled", zktest.Cancelled(), s, "/revoke/x", context.Canceled},
	} {
		t.Run("holder/"+tc.name, func(t *testing.T) {
			err := zktest.NoPanic(t, func() error { _, err := zklock.RevokeHolder(tc.ctx, tc.s, tc.path); return err })
			if !errors.Is(err, tc.want) {
				t.Fatalf("RevokeHolder(%q) = %v, want %v", tc.path, err, tc.want)
			}
		})
	}
	var nh *zklock.Hold
	if !isClosed(nh.Revoked()) {
		t.Fatal("nil Hold's Revoked is not closed")
	}
}

// What revocation costs in requests. The holder: nothing more than a
// plain lock, on acquisition and on a data change alike (the own-node
// watch already reads the data). The requester: RevokeNode one setData,
// RevokeHolder a getChildren and a setData.
func TestRevokeCost(t *testing.T) {
	servers := zktest.Servers(t)
	rs := connect(t, servers)
	ctx := ctxT(t, 30*time.Second)
	holderGets := func(opts ...zklock.Option) (acquire, revoke int64) {
		p := zktest.Path(t) + "/" + map[bool]string{false: "plain", true: "revocable"}[len(opts) > 0]
		s := connect(t, servers)
		l := newLock(t, s, p, opts...)
		g0 := zklock.Written(s, zklock.OpGetData)
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A plain hold arms its own-node watch once it has lasted the
		// lease's bound; a revocable one at once.
		eventually(t, 10*time.Second, "own-node watch", func() bool { return watchersOf(t, h.Node()) == 1 })
		g1 := zklock.Written(s, zklock.OpGetData)
		if err := zklock.RevokeNode(ctx, rs, h.Node()); err != nil {
			t.Fatal(err)
		}
		eventually(t, 5*time.Second, "watch re-armed", func() bool {
			return zklock.Written(s, zklock.OpGetData) > g1 && watchersOf(t, h.Node()) == 1
		})
		g2 := zklock.Written(s, zklock.OpGetData)
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
		return g1 - g0, g2 - g1
	}
	pa, pr := holderGets()
	ra, rr := holderGets(zklock.WithRevocable())
	t.Logf("holder getData: plain %d on acquire, %d on a revocation; revocable %d, %d", pa, pr, ra, rr)
	if ra != pa || rr != pr || rr != 1 {
		t.Fatalf("a revocable holder costs more: getData %d+%d, plain %d+%d", ra, rr, pa, pr)
	}

	p := zktest.Path(t)
	l := newLock(t, connect(t, servers), p)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	count := func() [3]int64 {
		return [3]int64{zklock.Written(rs, zklock.OpGetChildren2), zklock.Written(rs, zklock.OpSetData), zklock.Written(rs, zklock.OpGetData)}
	}
	c0 := count()
	if _, err := zklock.RevokeHolder(ctx, rs, p); err != nil {
		t.Fatal(err)
	}
	c1 := count()
	if err := zklock.RevokeNode(ctx, rs, h.Node()); err != nil {
		t.Fatal(err)
	}
	c2 := count()
	t.Logf("RevokeHolder: getChildren %d, setData %d, getData %d; RevokeNode: %d, %d, %d",
		c1[0]-c0[0], c1[1]-c0[1], c1[2]-c0[2], c2[0]-c1[0], c2[1]-c1[1], c2[2]-c1[2])
	if c1[0]-c0[0] != 1 || c1[1]-c0[1] != 1 || c1[2] != c0[2] || c2[0] != c1[0] || c2[1]-c1[1] != 1 || c2[2] != c1[2] {
		t.Fatalf("request counts %v -> %v -> %v", c0, c1, c2)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

// The connection drops right after the setData is sent, before its reply:
// the server applied it, and the retry must find the request there rather
// than write it again (which would fire the holder's watch twice, and a
// Curator holder's listener with it). The node's data version counts the
// writes applied.
func TestRevokeUnknownOutcome(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	l := newLock(t, connect(t, servers), p, zklock.WithRevocable())
	px := proxyTo(t, servers[0])
	rs := connect(t, []string{px.Addr()})
	ctx := ctxT(t, 30*time.Second)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	zklock.SetWriteHook(rs, func(op int32, b []byte) error {
		if op == zklock.OpSetData && armed.CompareAndSwap(false, true) {
			px.DropAfter(len(b)) // forwarded, then the connection drops
		}
		return nil
	})
	defer zklock.SetWriteHook(rs, nil)
	if err := zklock.RevokeNode(ctx, rs, h.Node()); err != nil {
		t.Fatal(err)
	}
	if st := px.Stats(); st.Dropped == 0 {
		t.Fatalf("proxy dropped nothing: %+v", st)
	}
	waitClosed(t, ctx, h.Revoked(), "revocation not delivered")
	_, stat, err := rs.Conn().Get(h.Node())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("setData written %d, getData %d, data version %d", zklock.Written(rs, zklock.OpSetData), zklock.Written(rs, zklock.OpGetData), stat.Version)
	if stat.Version != 1 {
		t.Fatalf("data version %d: the request was written %d times", stat.Version, stat.Version)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

package zklock_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The order every new connection keeps: the connect answer, go-zookeeper's
// re-sent credentials written and answered, its setWatches, then the
// session's own requests (the tap's multiRead and setWatches). ZooKeeper
// keeps authentication per connection: a request of the tap's written
// ahead of the credentials is judged anonymous, and under a lock ACL that
// keeps reads to the fleet's identity it is refused (zk.ErrNoAuth).

// opSetAuth is go-zookeeper's auth packet's opcode.
const opSetAuth = 100

// digestOnlyACL keeps every permission, reads included, to the fleet's
// identity: a fleet that keeps its locks to itself.
func digestOnlyACL() []zk.ACL { return zk.DigestACL(zk.PermAll, fleetUser, fleetPassword) }

// frameLog records the opcodes a session writes, connection by connection,
// from the first cut on: a connection begins with its connect request,
// whose protocol version (0) stands where a request's xid does, and no
// request of go-zookeeper's (xids from 1) or the tap's (negative) has xid 0.
type frameLog struct {
	mu    sync.Mutex
	on    bool
	conns [][]int32
}

func (f *frameLog) note(op int32, b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on {
		return
	}
	if len(b) >= 8 && binary.BigEndian.Uint32(b[4:8]) == 0 { // a connect request
		f.conns = append(f.conns, nil)
		return
	}
	if len(f.conns) > 0 {
		f.conns[len(f.conns)-1] = append(f.conns[len(f.conns)-1], op)
	}
}

func (f *frameLog) start() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = true
}

// outOfOrder names the first connection on which a request of the tap's
// (a multiRead, or a setWatches after go-zookeeper's own) went before the
// credentials' auth packet, or "" when none did.
func (f *frameLog) outOfOrder() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, ops := range f.conns {
		auth := slices.Index(ops, opSetAuth)
		read := slices.Index(ops, zklock.OpMultiRead)
		if read >= 0 && (auth < 0 || read < auth) {
			return fmt.Sprintf("connection %d after the first cut wrote %v after its connect request: a multiRead before the credentials", i+1, ops)
		}
	}
	return ""
}

// cutHook sets s's write hook for the test: it records the frames
// (frameLog) and fails the next exists once cut is set (cutConnection).
func cutHook(t *testing.T, s *zklock.Session) (cut *atomic.Bool, log *frameLog) {
	cut, log = &atomic.Bool{}, &frameLog{}
	zklock.SetWriteHook(s, func(op int32, b []byte) error {
		if op == zklock.OpExists && cut.CompareAndSwap(true, false) {
			return errors.New("test: the connection is cut")
		}
		log.note(op, b)
		return nil
	})
	t.Cleanup(func() { zklock.SetWriteHook(s, nil) })
	return cut, log
}

// cutConnection fails the session's next exists, and so its connection;
// go-zookeeper dials again into the same session. It returns once a
// request is answered on a new connection.
func cutConnection(t *testing.T, s *zklock.Session, cut *atomic.Bool, log *frameLog) {
	t.Helper()
	log.start()
	cut.Store(true)
	_, _, _ = s.Conn().Exists("/") // fails, and the connection with it
	eventually(t, 20*time.Second, "a request answered on a new connection", func() bool {
		_, _, err := s.Conn().Exists("/")
		return err == nil
	})
}

// TestWaitersKeepTheirReadsAcrossReconnections: waiters under a lock ACL
// that lets only the fleet read wait across several reconnections of their
// session; each is granted in its turn, none fails with zk.ErrNoAuth, and
// on each new connection the session's own reads went after the
// credentials. Before the tap waited for the credentials, the waiters'
// re-listings went out as soon as the connect answer was read (connect,
// multiRead, auth): Acquire returned "zk: not authenticated".
func TestWaitersKeepTheirReadsAcrossReconnections(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: reconnections of waiting sessions, about 5 s")
	}
	servers := zktest.Servers(t)
	holder := connect(t, servers, zklock.WithDigestAuth(fleetUser, fleetPassword))
	s := connect(t, servers, zklock.WithDigestAuth(fleetUser, fleetPassword))
	root := aclRoot(t, holder, digestOnlyACL())
	ctx := ctxT(t, 2*time.Minute)

	const keys = 8
	holds := make([]*zklock.Hold, keys)
	waits := make([]<-chan acquired, keys)
	for i := range keys {
		path := fmt.Sprintf("%s/key-%d", root, i)
		h, err := newLock(t, holder, path, zklock.WithACL(digestOnlyACL())).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		holds[i] = h
		waits[i] = goAcquire(ctx, newLock(t, s, path, zklock.WithACL(digestOnlyACL())))
	}
	eventually(t, 20*time.Second, "every waiter queued", func() bool {
		for i := range keys {
			if len(children(t, holder.Conn(), fmt.Sprintf("%s/key-%d", root, i))) != 2 {
				return false
			}
		}
		return true
	})

	cut, log := cutHook(t, s)
	for range 4 {
		cutConnection(t, s, cut, log)
		time.Sleep(300 * time.Millisecond) // the waiters' re-listings go out
		for i, w := range waits {
			select {
			case a := <-w:
				t.Fatalf("key %d: the waiter returned while the key was held: %v", i, a.err)
			default:
			}
		}
	}
	if bad := log.outOfOrder(); bad != "" {
		t.Error(bad)
	}
	for i, h := range holds {
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
		a := <-waits[i]
		if a.err != nil {
			t.Fatalf("key %d: the waiter failed after %d reconnections: %v", i, 4, a.err)
		}
		if err := a.h.Release(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOwnWatchesSetJustBeforeTheirRead: the session's own watches go in a
// setWatches written just before the multiRead that reads their nodes, in
// the same write: a change between the read and the watch would go unseen
// until the next event, were the watch set after the read.
func TestOwnWatchesSetJustBeforeTheirRead(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	ctx := ctxT(t, time.Minute)
	base := zktest.Path(t)
	if err := zkCreateAll(s.Conn(), base); err != nil {
		t.Fatal(err)
	}
	const n = 3
	for i := range n {
		if _, err := s.Conn().Create(fmt.Sprintf("%s/n-%d", base, i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var ops []int32
	zklock.SetWriteHook(s, func(op int32, _ []byte) error {
		mu.Lock()
		defer mu.Unlock()
		ops = append(ops, op)
		return nil
	})
	defer zklock.SetWriteHook(s, nil)
	queued, remove := holdSender(s, n, nil)
	defer remove()
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, _, unwatch, err := zklock.WatchNode(ctx, s, fmt.Sprintf("%s/n-%d", base, i), func(zk.Event) {})
			t.Cleanup(unwatch)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if !<-queued {
		t.Fatalf("the %d reads did not queue together", n)
	}
	mu.Lock()
	defer mu.Unlock()
	set := slices.Index(ops, zklock.OpSetWatches)
	if set < 0 || set+1 >= len(ops) || ops[set+1] != zklock.OpMultiRead || slices.Index(ops, zklock.OpMultiRead) < set {
		t.Errorf("the session wrote %v: want its setWatches (%d) just before the multiRead (%d) that reads the watched nodes", ops, zklock.OpSetWatches, zklock.OpMultiRead)
	}
}

// TestRevocableHoldAcrossReconnectionsUnderADigestACL: a revocable hold
// (its own-node watch armed at once) under a lock ACL that lets only the
// fleet read keeps its watch across several reconnections of its session
// (WithLossOnExpiryOnly: a disconnection alone ends no hold), and a
// revocation request written after them is told. The hold's read of its
// node on each new connection goes after go-zookeeper's re-sent
// credentials: before, it went ahead of them, was refused zk.ErrNoAuth,
// and waited a retry's pause (here a minute, WithMaxRetryInterval) before
// the node was watched again.
func TestRevocableHoldAcrossReconnectionsUnderADigestACL(t *testing.T) {
	defer zklock.SetOwnAlone()() // a lone hold's read goes as the session's own, as many holds' do
	servers := zktest.Servers(t)
	auth := zklock.WithDigestAuth(fleetUser, fleetPassword)
	s := connect(t, servers, auth, zklock.WithLossOnExpiryOnly(), zklock.WithMaxRetryInterval(time.Minute))
	admin := connect(t, servers, auth)
	root := aclRoot(t, admin, digestOnlyACL())
	ctx := ctxT(t, 2*time.Minute)
	h, err := newLock(t, s, root+"/job", zklock.WithACL(digestOnlyACL()), zklock.WithRevocable()).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	// Armed: its read answered (the server holds the watch from the
	// setWatches before the read is answered: a cut in between fails the
	// read, which is then retried a retry's pause later).
	watched := func() bool { return zklock.OwnWatchArmedForTest(h) && watchersOf(t, h.Node()) == 1 }
	eventually(t, 10*time.Second, "the hold's own-node watch armed", watched)

	cut, log := cutHook(t, s)
	for range 3 {
		cutConnection(t, s, cut, log)
		eventually(t, 10*time.Second, "the hold's own-node watch set again on the new connection", watched)
	}
	if zktest.IsClosed(h.Lost()) {
		t.Fatalf("the hold ended across the reconnections: %v", h.Err())
	}
	if _, err := zklock.RevokeHolder(ctx, admin, root+"/job"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Revoked():
	case <-ctx.Done():
		t.Fatal("the revocation request, written after the reconnections, not told")
	}
}

// TestOwnNodeReadCutRetriedAtTheNextConnection: a hold's read of its own
// node that its connection's end fails (here the read that sets the
// watch again after a reconnection, cut as it is written) is made again
// once the session has a new connection, not a retry's pause later (here
// a minute, WithMaxRetryInterval): meanwhile an operator's deletion or a
// revocation request would go unseen.
func TestOwnNodeReadCutRetriedAtTheNextConnection(t *testing.T) {
	defer zklock.SetOwnAlone()() // a lone hold's read goes as the session's own, as many holds' do
	s := connect(t, zktest.Servers(t), zklock.WithLossOnExpiryOnly(), zklock.WithMaxRetryInterval(time.Minute))
	ctx := ctxT(t, time.Minute)
	h, err := newLock(t, s, zktest.Path(t), zklock.WithRevocable()).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	watched := func() bool { return zklock.OwnWatchArmedForTest(h) && watchersOf(t, h.Node()) == 1 }
	eventually(t, 10*time.Second, "the hold's own-node watch armed", watched)

	var cut, cutRead atomic.Bool
	zklock.SetWriteHook(s, func(op int32, _ []byte) error {
		switch {
		case op == zklock.OpExists && cut.CompareAndSwap(true, false):
			return errors.New("test: the connection is cut")
		case op == zklock.OpMultiRead && cutRead.CompareAndSwap(true, false):
			return errors.New("test: the connection is cut as the hold's read is written")
		}
		return nil
	})
	defer zklock.SetWriteHook(s, nil)
	cutRead.Store(true)
	cut.Store(true)
	_, _, _ = s.Conn().Exists("/") // fails, and the connection with it
	eventually(t, 20*time.Second, "the hold's read written on a new connection, and cut", func() bool { return !cutRead.Load() })
	eventually(t, 10*time.Second, "the hold's own-node watch set again on the next connection", watched)
	if zktest.IsClosed(h.Lost()) {
		t.Fatalf("the hold ended: %v", h.Err())
	}
}

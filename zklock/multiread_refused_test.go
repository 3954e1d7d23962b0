package zklock_test

import (
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// A server before ZooKeeper 3.6 does not know multiRead (opcode 22). Its
// ZooKeeperServer.submitRequest hands an unknown opcode to
// UnimplementedRequestProcessor, which answers the request's xid with
// error Unimplemented (-6), no body, in the request's place among the
// connection's answers, and then closes the connection (sendCloseSession:
// the connection, not the session). No 3.5 server can be had here, so
// olderServer stands in front of a real 3.8 one and does that to every
// multiRead while refusing is set: the request goes on as a getData of a
// path that does not exist, under the same xid, so that its answer comes
// where the server would have put it; that answer is rewritten to the
// refusal, and the connection is closed after it. Everything else passes
// whole, frame by frame.
type olderServer struct {
	ln       net.Listener
	upstream string
	refusing atomic.Bool
	refused  atomic.Int64 // multiRead requests answered Unimplemented
	// refusingWatches: the session's own setWatches (an xid of the tap's
	// range, below zero) is answered with an error, in its place, and the
	// connection kept, as no real server does: Floor.Watch's fallback.
	refusingWatches atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

const (
	opGetData    = 4
	opMultiRead  = 22
	opSetWatches = 101
)

// unimplemented is ZooKeeper's error Unimplemented (-6) as it goes on the
// wire.
var unimplemented = uint32(0xFFFFFFFA)

func newOlderServer(t *testing.T, upstream string) *olderServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &olderServer{ln: ln, upstream: upstream}
	o.wg.Add(1)
	go o.accept()
	t.Cleanup(o.close)
	return o
}

func (o *olderServer) addr() string { return o.ln.Addr().String() }

func (o *olderServer) accept() {
	defer o.wg.Done()
	for {
		c, err := o.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", o.upstream)
		if err != nil {
			c.Close()
			continue
		}
		o.mu.Lock()
		o.conns = append(o.conns, c, s)
		o.mu.Unlock()
		var pending sync.Map // xids of the multiReads sent on as getData
		o.wg.Add(2)
		go o.toServer(c, s, &pending)
		go o.toClient(s, c, &pending)
	}
}

func (o *olderServer) close() {
	o.ln.Close()
	o.mu.Lock()
	for _, c := range o.conns {
		c.Close()
	}
	o.mu.Unlock()
	o.wg.Wait()
}

// frame reads one length-prefixed frame, its prefix with it.
func frame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 16<<20 {
		return nil, errors.New("frame too large")
	}
	b := make([]byte, 4+size)
	copy(b, n[:])
	_, err := io.ReadFull(r, b[4:])
	return b, err
}

// toServer passes the client's frames on; a multiRead, while refusing, as
// a getData of a path that is not there. The first frame is the connect
// request, which has no header.
func (o *olderServer) toServer(c, s net.Conn, pending *sync.Map) {
	defer o.wg.Done()
	defer s.Close()
	for first := true; ; first = false {
		b, err := frame(c)
		if err != nil {
			return
		}
		if !first && len(b) >= 12 {
			xid, op := int32(binary.BigEndian.Uint32(b[4:])), int32(binary.BigEndian.Uint32(b[8:]))
			if op == opMultiRead && o.refusing.Load() || op == opSetWatches && xid < -8 && o.refusingWatches.Load() {
				pending.Store(xid, op == opMultiRead)
				b = getDataFrame(xid, "/zookeeper-3.5-knows-no-multiRead")
			}
		}
		if _, err := s.Write(b); err != nil {
			return
		}
	}
}

// toClient passes the server's frames back; the answer to a multiRead sent
// on as getData becomes Unimplemented, and then both connections close.
func (o *olderServer) toClient(s, c net.Conn, pending *sync.Map) {
	defer o.wg.Done()
	defer c.Close()
	for first := true; ; first = false {
		b, err := frame(s)
		if err != nil {
			return
		}
		refuse, closes := false, false
		if !first && len(b) >= 20 {
			var v any
			v, refuse = pending.LoadAndDelete(int32(binary.BigEndian.Uint32(b[4:])))
			closes = refuse && v.(bool)
		}
		if refuse {
			b = b[:20]
			binary.BigEndian.PutUint32(b, 16)
			binary.BigEndian.PutUint32(b[16:], unimplemented)
			o.refused.Add(1)
		}
		if _, err := c.Write(b); err != nil || closes {
			s.Close()
			return
		}
	}
}

// getDataFrame is a getData request of path, no watch, under xid.
func getDataFrame(xid int32, path string) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 4, 4+8+4+len(path)+1), uint32(xid))
	b = binary.BigEndian.AppendUint32(b, opGetData)
	b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
	b = append(b, path...)
	b = append(b, 0)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// handOver checks that a and b take turns on one lock path: a holds, b
// waits, a releases, b holds, and the tokens grow.
func handOver(t *testing.T, a, b *zklock.Lock) {
	t.Helper()
	ctx := zktest.Context(t, time.Minute)
	h, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiter := goAcquire(ctx, b)
	select {
	case got := <-waiter:
		t.Fatalf("the second lock was granted while the first held: %v", got.err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	got, ok := zktest.Await(t, "the waiter's grant", waiter)
	if !ok || got.err != nil {
		t.Fatalf("the waiter: %v", got.err)
	}
	if got.h.Token() <= h.Token() {
		t.Errorf("the waiter's token %d, not above its predecessor's %d", got.h.Token(), h.Token())
	}
	if err := got.h.Release(); err != nil {
		t.Fatal(err)
	}
}

// A session on a server before 3.6 finds multiRead refused by Dial's
// probe, says so once, and lists with go-zookeeper's getChildren2: its
// locks take turns with a session on a 3.8 server, and no acquisition
// sends a multiRead again (each would cost a connection).
func TestOlderServerListsOneByOne(t *testing.T) {
	old := newOlderServer(t, zktest.Servers(t)[0])
	old.refusing.Store(true)
	var logs zktest.SyncBuffer
	s := connect(t, []string{old.addr()}, zklock.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if n := old.refused.Load(); n != 1 {
		t.Fatalf("Dial's probe: %d multiRead refused, want 1", n)
	}
	p := zktest.Path(t)
	a, b := newLock(t, s, p), newLock(t, connect(t, zktest.Servers(t)), p)
	reads, lists := zklock.Written(s, zklock.OpMultiRead), zklock.Written(s, zklock.OpGetChildren2)
	handOver(t, a, b)
	handOver(t, b, a)
	if n := zklock.Written(s, zklock.OpMultiRead) - reads; n != 0 {
		t.Errorf("%d multiRead requests after the refusal, want none", n)
	}
	if n := zklock.Written(s, zklock.OpGetChildren2) - lists; n < 2 {
		t.Errorf("%d getChildren2 requests for two acquisitions through the older server, want at least 2", n)
	}
	if n := strings.Count(logs.String(), "listings go one by one"); n != 1 {
		t.Errorf("the refusal told %d times, want once:\n%s", n, logs.String())
	}
}

// A server that refuses multiRead only after Dial's probe (the session
// moved to an older server of a mixed ensemble, mid-upgrade): the batch it
// refuses is listed one by one, its acquisition takes the lock all the
// same, the refusal is told once, and later listings are go-zookeeper's.
func TestMultiReadRefusedLaterListsOneByOne(t *testing.T) {
	old := newOlderServer(t, zktest.Servers(t)[0])
	var logs zktest.SyncBuffer
	s := connect(t, []string{old.addr()}, zklock.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	p := zktest.Path(t)
	a, b := newLock(t, s, p), newLock(t, connect(t, zktest.Servers(t)), p)
	handOver(t, a, b) // multiRead taken
	old.refusing.Store(true)
	handOver(t, a, b)
	if n := old.refused.Load(); n != 1 {
		t.Errorf("%d multiRead refused, want 1: after the first, listings are go-zookeeper's", n)
	}
	reads := zklock.Written(s, zklock.OpMultiRead)
	handOver(t, b, a)
	if n := zklock.Written(s, zklock.OpMultiRead) - reads; n != 0 {
		t.Errorf("%d multiRead requests after the refusal, want none", n)
	}
	if n := strings.Count(logs.String(), "listings go one by one"); n != 1 {
		t.Errorf("the refusal told %d times, want once:\n%s", n, logs.String())
	}
}

// A server that answers the session's own setWatches with an error (none
// does; the fallback is there all the same): the batch's reads with a
// watch go as go-zookeeper's GetW, the waiter still gets the lock when
// its predecessor goes (the re-check an hour away), the refusal is told
// once, and later watches are GetW's while listings stay multiReads.
func TestSetWatchesRefusedWatchesOneByOne(t *testing.T) {
	defer zklock.SetOwnAlone()() // one waiter: its read alone would be GetW's
	old := newOlderServer(t, zktest.Servers(t)[0])
	old.refusingWatches.Store(true)
	var logs zktest.SyncBuffer
	s := connect(t, []string{old.addr()}, zklock.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	p := zktest.Path(t)
	a := newLock(t, connect(t, zktest.Servers(t)), p)
	b := newLock(t, s, p, zklock.WithRecheckInterval(time.Hour))
	gets := zklock.Written(s, zklock.OpGetData)
	handOver(t, a, b)
	if n := old.refused.Load(); n != 1 {
		t.Errorf("%d setWatches refused, want 1", n)
	}
	if n := zklock.Written(s, zklock.OpGetData) - gets; n != 1 {
		t.Errorf("%d getData requests after the refusal, want the one GetW of the refused batch", n)
	}
	sets, reads := zklock.Written(s, zklock.OpSetWatches), zklock.Written(s, zklock.OpMultiRead)
	handOver(t, a, b)
	if n := zklock.Written(s, zklock.OpSetWatches) - sets; n != 0 {
		t.Errorf("%d setWatches after the refusal, want none", n)
	}
	if zklock.Written(s, zklock.OpMultiRead) == reads {
		t.Error("no multiRead after the refusal of setWatches: the listings went one by one too")
	}
	if n := strings.Count(logs.String(), "watches go one by one"); n != 1 {
		t.Errorf("the refusal told %d times, want once:\n%s", n, logs.String())
	}
}

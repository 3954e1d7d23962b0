package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// Issue 49, item 1: a request's size is what it encodes to. The writer
// sized a create as its prefix and data plus 64 bytes per ACL entry; with
// long ACL ids (valid for the server: each acquisition alone succeeds) a
// burst's multi was many times its estimate, go-zookeeper refused it
// unsent (zk.ErrShortBuffer), and every write in it failed.

// juteMaxBuffer is ZooKeeper's default jute.maxbuffer (0xfffff): the server
// drops the connection of a request whose header and body exceed it, and
// the test's server runs with it.
const juteMaxBuffer = 0xfffff

// digestACL is world's ACL and a digest entry whose id is n bytes long
// (a long user name), which the server accepts: the entry alone makes a
// create's request about n bytes larger.
func digestACL(n int) []zk.ACL {
	return append(zk.WorldACL(zk.PermAll), zk.ACL{Perms: zk.PermRead, Scheme: "digest",
		ID: strings.Repeat("u", n-29) + ":" + strings.Repeat("h", 27) + "="})
}

// requests records the writer's requests on s's wire: each one's opcode
// and size (header and body, as the server reads them).
type requests struct {
	mu    sync.Mutex
	sizes []int
	ops   []int32
}

func (r *requests) record(s *zklock.Session) (stop func()) {
	zklock.SetWriteHook(s, func(op int32, b []byte) error {
		if op == zklock.OpCreate || op == zklock.OpMulti || op == zklock.OpDelete {
			r.mu.Lock()
			r.sizes, r.ops = append(r.sizes, len(b)-4), append(r.ops, op)
			r.mu.Unlock()
		}
		return nil
	})
	return func() { zklock.SetWriteHook(s, nil) }
}

// Issue 55, item 2: under a chroot the wire puts the chroot before every
// path after the writer sized the request by the paths its callers named,
// so a request counted at the limit went out over jute.maxbuffer and the
// server dropped the connection. Each size test runs twice, without a
// chroot and within one: every size it computes counts each path as the
// server reads it (the chroot's bytes added), and the recorder reads the
// requests as they go out, chroot included.

// inChroots runs test without a chroot and within one.
func inChroots(t *testing.T, test func(t *testing.T, inChroot bool)) {
	for _, inChroot := range []bool{false, true} {
		t.Run(fmt.Sprintf("chroot=%v", inChroot), func(t *testing.T) { test(t, inChroot) })
	}
}

// sizeSessions returns the session under test and an admin session on the
// shared server, both within a new chroot when inChroot, and the chroot
// ("" for none): the wire puts it before every path the sessions name.
func sizeSessions(t *testing.T, inChroot bool, opts ...zklock.SessionOption) (s, admin *zklock.Session, chroot string) {
	servers := zktest.Servers(t)
	if inChroot {
		chroot, _ = newChroot(t)
		servers = chrooted(t, chroot)
	}
	return connect(t, servers, opts...), connect(t, servers), chroot
}

// sizeRoot returns sizeSessions' session and chroot, a node made for the
// test, and the session's requests recorded from now on.
func sizeRoot(t *testing.T, inChroot bool) (s *zklock.Session, chroot, root string, rec *requests) {
	s, admin, chroot := sizeSessions(t, inChroot)
	root = zktest.Path(t)
	if err := zkCreateAll(admin.Conn(), root); err != nil {
		t.Fatal(err)
	}
	rec = &requests{}
	t.Cleanup(rec.record(s))
	return s, chroot, root, rec
}

// sentPath is what path takes in a request as the server reads it: its
// length and its bytes, the chroot's before them.
func sentPath(chroot, path string) int { return 4 + len(chroot) + len(path) }

func (r *requests) take() ([]int, []int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sizes, ops := r.sizes, r.ops
	r.sizes, r.ops = nil, nil
	return sizes, ops
}

// TestBurstOfLargeACLs: 1,024 acquisitions on 1,024 paths, each with a
// 32 KiB ACL entry and one in 128 with an entry as large as the server
// accepts (its create alone is exactly jute.maxbuffer). They are queued
// while the writer is held and then let go, in waves of 64 (the session's
// bound on requests in flight lets about 128 creates wait at once): every
// acquisition succeeds, no request is over the limit, and the creates go
// in as few requests as the limit allows (the greedy split of each wave,
// in the queue's order, counted on the wire). With a one-op transaction
// that the server refuses queued in the middle of a wave, the transaction
// alone fails, at its own op, and the others cost one request more (its
// batch goes again without it). Within a chroot too, the sizes counted
// with its bytes in every path.
func TestBurstOfLargeACLs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 1,024 acquisitions with large ACLs, about 20 s")
	}
	inChroots(t, func(t *testing.T, inChroot bool) {
		for _, withTxn := range []bool{false, true} {
			t.Run(fmt.Sprintf("txn=%v", withTxn), func(t *testing.T) { burstOfLargeACLs(t, inChroot, withTxn) })
		}
	})
}

func burstOfLargeACLs(t *testing.T, inChroot, withTxn bool) {
	const n, wave = 1024, 64
	// A session timeout of 20 s: its bound on requests in flight, which
	// shrinks when a round trip takes more than an eighth of the lease's
	// bound (a quarter of the timeout), keeps room for a wave of 1 MiB
	// requests under the race detector on a loaded machine.
	s, admin, chroot := sizeSessions(t, inChroot, zklock.WithSessionTimeout(20*time.Second))
	var rec requests
	defer rec.record(s)()
	root, locks, opSize := largeACLLocks(t, s, admin, &rec, n)
	ctx := ctxT(t, 120*time.Second)
	want, failed, sent, biggest := 0, 0, 0, 0
	start := time.Now()
	for w := 0; w < n; w += wave {
		txn := withTxn && w == n/2
		queued, holds, errs := burstWave(t, ctx, s, locks[w:w+wave], opSize[w:w+wave], txn, chroot, root)
		failed += len(errs)
		for _, err := range errs[:min(len(errs), 3)] {
			t.Errorf("an acquisition failed: %v", err)
		}
		sizes, _ := rec.take()
		want += greedy(queued, juteMaxBuffer)
		sent += len(sizes)
		biggest = max(biggest, slices.Max(append(sizes, 0)))
		for _, h := range holds {
			_ = h.Release()
		}
		nodesDeleted(t, admin, locks[w:w+wave])
		rec.take() // the releases' deletes
	}
	if failed > 0 {
		t.Fatalf("%d of %d acquisitions failed", failed, n)
	}
	t.Logf("%d acquisitions in %d requests (the limit allows %d), the largest %d bytes, in %v", n, sent, want, biggest, time.Since(start))
	switch {
	case biggest > juteMaxBuffer:
		t.Errorf("a request of %d bytes, over jute.maxbuffer (%d)", biggest, juteMaxBuffer)
	case !withTxn && sent != want:
		t.Errorf("%d requests; the limit allows %d", sent, want)
	case withTxn && sent > want+1:
		t.Errorf("%d requests; the limit allows %d, and the refused transaction costs one more", sent, want)
	}
}

// largeACLLocks makes n locks of s on n new paths, each with a 32 KiB ACL
// entry, and one in 128 with an entry that makes its create alone exactly
// jute.maxbuffer, and returns them with their creates' ops' sizes in a
// multi. A first create alone, counted on the wire (rec), says what a
// create with a 32 KiB entry encodes to.
func largeACLLocks(t *testing.T, s, admin *zklock.Session, rec *requests, n int) (root string, locks []*zklock.Lock, opSize []int) {
	const entry = 32 << 10
	root = zktest.Path(t)
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("%s/k%04d", root, i)
		if err := zkCreateAll(admin.Conn(), paths[i]); err != nil {
			t.Fatal(err)
		}
	}
	first := newLock(t, s, paths[0], zklock.WithACL(digestACL(entry)))
	h, err := first.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_ = h.Release()
	nodesDeleted(t, admin, []*zklock.Lock{first})
	sizes, ops := rec.take()
	if len(ops) == 0 || ops[0] != zklock.OpCreate {
		t.Fatalf("the lone create was not written alone: %v", ops)
	}
	op := sizes[0] + 1 // the create's op in a multi: its 9-byte header instead of the request's 8
	largest := entry + juteMaxBuffer - sizes[0]
	opSize = make([]int, n)
	locks = make([]*zklock.Lock, n)
	for i := range locks {
		acl, size := digestACL(entry), op
		if i%128 == 127 {
			acl, size = digestACL(largest), op+largest-entry
		}
		locks[i], opSize[i] = newLock(t, s, paths[i], zklock.WithACL(acl)), size
	}
	return root, locks, opSize
}

// nodesDeleted waits until the nodes of locks are gone on the server: the
// requests that deleted them were written, and recorded, before. (The
// writer's queue empty is not enough: a round taken from it may not be
// written yet, and was counted in the next wave.)
func nodesDeleted(t *testing.T, admin *zklock.Session, locks []*zklock.Lock) {
	t.Helper()
	eventually(t, 10*time.Second, "the released nodes deleted", func() bool {
		for _, l := range locks {
			if kids, _, err := admin.Conn().Children(l.Path()); err != nil || len(kids) > 0 {
				return false
			}
		}
		return true
	})
}

// burstWave queues the creates of locks (their ops' sizes in a multi:
// opSize) with the writer held, and a one-op transaction the server
// refuses in their middle when txn, lets the writer go, and returns the
// sizes of the writes queued, in order, the holds and the acquisitions'
// errors.
func burstWave(t *testing.T, ctx context.Context, s *zklock.Session, locks []*zklock.Lock, opSize []int, txn bool, chroot, root string) ([]int, []*zklock.Hold, []error) {
	t.Helper()
	let := zklock.HoldWriterForTest()
	defer let()
	half := len(locks) / 2
	var got []<-chan acquired
	var queued []int
	// acquire queues locks in order of their sizes' groups: the writes of
	// one size (whose order among them changes no request) are all queued
	// before the first of another size goes, so that the queue's order is
	// the one greedy counts (a large create queued amid a run of small
	// ones, as the goroutines raced, split it in one request more).
	acquire := func(locks []*zklock.Lock, sizes []int) {
		for i, l := range locks {
			if n := len(queued); n > 0 && sizes[i] != queued[n-1] {
				eventually(t, 10*time.Second, "the writes before queued", func() bool { return zklock.QueuedWritesForTest(s) == n })
			}
			got, queued = append(got, goAcquire(ctx, l)), append(queued, sizes[i])
		}
	}
	acquire(locks[:half], opSize[:half])
	eventually(t, 10*time.Second, "half the wave queued", func() bool { return zklock.QueuedWritesForTest(s) == half })
	told := make(chan error, 1)
	if txn {
		go func() {
			_, err := s.Txn(ctx, &zk.CheckVersionRequest{Path: root, Version: 99})
			told <- err
		}()
		eventually(t, 10*time.Second, "the transaction queued", func() bool { return zklock.QueuedWritesForTest(s) == half+1 })
		queued = append(queued, 9+sentPath(chroot, root)+4)
	}
	acquire(locks[half:], opSize[half:])
	eventually(t, 10*time.Second, "the wave queued", func() bool { return zklock.QueuedWritesForTest(s) == len(queued) })
	let()
	var errs []error
	var holds []*zklock.Hold
	for _, c := range got {
		if r := <-c; r.err != nil {
			errs = append(errs, r.err)
		} else {
			holds = append(holds, r.h)
		}
	}
	if txn {
		var oe *zklock.OpError
		if err := <-told; !errors.As(err, &oe) || oe.Index != 0 || !errors.Is(err, zk.ErrBadVersion) {
			t.Errorf("the one-op transaction: %v; want its own op refused (zk.ErrBadVersion)", err)
		}
	}
	return queued, holds, errs
}

// greedy counts the requests of writes, their ops' sizes in a multi in
// queue order, split greedily under limit: a request alone is a single
// create (8 bytes of header and its op without the 9-byte op header);
// more go in a multi (8 bytes of header, each op with its 9-byte header,
// and a closing 9-byte header).
func greedy(ops []int, limit int) int {
	n, size, k := 0, 0, 0
	for _, op := range ops {
		if k > 0 && size+op > limit {
			n, size, k = n+1, 0, 0
		}
		if k == 0 {
			size = 8 + 9
		}
		size, k = size+op, k+1
	}
	if k > 0 {
		n++
	}
	return n
}

// TestTooLargeRefusedBeforeSending: a write that alone is larger than a
// request may be is refused before anything is sent, with an error that
// names its size and the limit: an acquisition whose create is one byte
// over jute.maxbuffer (a long ACL id), ErrInvalidOption; a transaction
// one byte over, ErrInvalidOp. The server would drop the connection of
// either (and with it every request out); nothing reaches it. Within a
// chroot too: one byte over as the server reads it, the chroot in its
// paths.
func TestTooLargeRefusedBeforeSending(t *testing.T) { inChroots(t, tooLargeRefusedBeforeSending) }

func tooLargeRefusedBeforeSending(t *testing.T, inChroot bool) {
	s, admin, chroot := sizeSessions(t, inChroot)
	root := zktest.Path(t)
	if err := zkCreateAll(admin.Conn(), root+"/k"); err != nil {
		t.Fatal(err)
	}
	var rec requests
	defer rec.record(s)()
	const entry = 1 << 10
	h, err := newLock(t, s, root+"/k", zklock.WithACL(digestACL(entry))).Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_ = h.Release()
	s.Flush()
	// The release's delete out before the sizes are taken: a loaded make
	// test's race run saw it leave after, counted as a write too large.
	eventually(t, 5*time.Second, "the release's delete sent", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return slices.Contains(rec.ops, zklock.OpDelete)
	})
	eventually(t, 5*time.Second, "the writer idle", func() bool { return zklock.WriterIdleForTest(s) })
	sizes, _ := rec.take()
	over := entry + juteMaxBuffer - sizes[0] + 1 // the id that makes the create one byte over
	wantSize := fmt.Sprintf("%d bytes", juteMaxBuffer+1)
	wantLimit := fmt.Sprintf("limit of %d", juteMaxBuffer)

	_, err = newLock(t, s, root+"/k", zklock.WithACL(digestACL(over))).Acquire(ctxT(t, 10*time.Second))
	if !errors.Is(err, zklock.ErrInvalidOption) || !strings.Contains(err.Error(), wantSize) || !strings.Contains(err.Error(), wantLimit) {
		t.Errorf("Acquire with a create one byte over the limit: %v; want ErrInvalidOption naming %s and the %s", err, wantSize, wantLimit)
	}
	t.Logf("the acquisition: %v", err)
	data := make([]byte, juteMaxBuffer-8-9-(sentPath(chroot, root)+4+4)-9+1) // a multi of one set, one byte over
	_, err = s.Txn(ctxT(t, 10*time.Second), &zk.SetDataRequest{Path: root, Data: data, Version: -1})
	if !errors.Is(err, zklock.ErrInvalidOp) || !strings.Contains(err.Error(), wantSize) || !strings.Contains(err.Error(), wantLimit) {
		t.Errorf("a transaction one byte over the limit: %v; want ErrInvalidOp naming %s and the %s", err, wantSize, wantLimit)
	}
	t.Logf("the transaction: %v", err)
	if sizes, _ := rec.take(); len(sizes) > 0 {
		t.Errorf("%d requests sent (sizes %v): a write too large must not leave", len(sizes), sizes)
	}
}

// TestLimitIsExact: the writer sizes every op as go-zookeeper encodes it. A
// transaction of every kind of op (a create with three ACL entries of
// three schemes and no data, a set, a check, a delete) padded to exactly
// jute.maxbuffer is sent, at that size on the wire, and applied; one byte
// more is refused before sending. The test counts the bytes by hand,
// from jute's rules; the writer by its own code; go-zookeeper by its
// encoder: the three agree, to the byte. Within a chroot too, its bytes
// in each of the four paths: exactly the limit as the server reads it is
// applied, and one byte more refused unsent (the writer counted the
// paths without it, and such a transaction went out over the limit: the
// server dropped the connection, and its caller was told "outcome
// unknown").
func TestLimitIsExact(t *testing.T) { inChroots(t, limitIsExact) }

func limitIsExact(t *testing.T, inChroot bool) {
	s, chroot, root, rec := sizeRoot(t, inChroot)
	str := func(x string) int { return 4 + len(x) }
	acl := append(zk.WorldACL(zk.PermAll), zk.DigestACL(zk.PermRead, "user", "pw")[0],
		zk.ACL{Perms: zk.PermRead, Scheme: "ip", ID: "127.0.0.1"})
	node := root + "/n"
	ops := func(data []byte) []any {
		return []any{
			&zk.CreateRequest{Path: node, Acl: acl, Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: root, Data: data, Version: -1},
			&zk.CheckVersionRequest{Path: root, Version: -1},
			&zk.DeleteRequest{Path: node, Version: -1},
		}
	}
	aclSize := 4
	for _, e := range acl {
		aclSize += 4 + str(e.Scheme) + str(e.ID)
	}
	path := func(p string) int { return sentPath(chroot, p) }
	fixed := 8 + // the request's header
		9 + path(node) + 4 + aclSize + 4 + // the create, its data nil
		9 + path(root) + 4 + 4 + // the set, but its data
		9 + path(root) + 4 + // the check
		9 + path(node) + 4 + // the delete
		9 // the closing header
	for _, extra := range []int{0, 1} {
		data := make([]byte, juteMaxBuffer-fixed+extra)
		_, err := s.Txn(ctxT(t, 10*time.Second), ops(data)...)
		sizes, _ := rec.take()
		switch {
		case extra == 0 && (err != nil || len(sizes) != 1 || sizes[0] != juteMaxBuffer):
			t.Errorf("a transaction of exactly the limit: %v, sent as %v bytes; want applied, one request of %d", err, sizes, juteMaxBuffer)
		case extra == 1 && (!errors.Is(err, zklock.ErrInvalidOp) || len(sizes) > 0):
			t.Errorf("a transaction one byte over the limit: %v, sent as %v bytes; want ErrInvalidOp, nothing sent", err, sizes)
		}
	}
}

// TestBatchPackedToTheLimit: the writer packs the writes queued together
// into one request up to the limit, counting each path as the server
// reads it. Two transactions (a set of the same node each) queued while
// the writer is held, whose one multi would be exactly jute.maxbuffer, go
// as one request of that size; one byte more, as two; both are applied
// each time. Within a chroot too (the writer counted the paths without
// it, and put two such transactions in one request over the limit: the
// server dropped the connection, and both were told "outcome unknown").
func TestBatchPackedToTheLimit(t *testing.T) { inChroots(t, batchPackedToTheLimit) }

func batchPackedToTheLimit(t *testing.T, inChroot bool) {
	s, chroot, root, rec := sizeRoot(t, inChroot)
	set := 9 + sentPath(chroot, root) + 4 + 4 // a set's op in a multi, but its data
	data := juteMaxBuffer - (8 + 2*set + 9)   // both sets' data in a multi of exactly the limit
	for _, extra := range []int{0, 1} {
		errs := make(chan error, 2)
		let := zklock.HoldWriterForTest()
		for i, n := range []int{data / 2, data - data/2 + extra} {
			go func() {
				_, err := s.Txn(ctxT(t, 20*time.Second), &zk.SetDataRequest{Path: root, Data: make([]byte, n), Version: -1})
				errs <- err
			}()
			eventually(t, 10*time.Second, "the transaction queued", func() bool { return zklock.QueuedWritesForTest(s) == i+1 })
		}
		let()
		for range 2 {
			if err := <-errs; err != nil {
				t.Errorf("extra %d: a transaction: %v; want applied", extra, err)
			}
		}
		sizes, _ := rec.take()
		switch {
		case extra == 0 && (len(sizes) != 1 || sizes[0] != juteMaxBuffer):
			t.Errorf("two transactions that fill the limit together: sent as %v bytes; want one request of %d", sizes, juteMaxBuffer)
		case extra == 1 && (len(sizes) != 2 || slices.Max(sizes) > juteMaxBuffer):
			t.Errorf("two transactions one byte over the limit together: sent as %v bytes; want two requests", sizes)
		}
	}
}

package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// What a transaction's caller is told is true (guard.go's contract): a
// transaction reported not applied is never applied afterwards, and an
// unknown outcome is ordered before anything the caller sends next, so
// that a read-back tells the truth. Each test does what the docs tell a
// caller to do, reads back at once, and checks that the server never
// contradicts that read later.

// txnFunc is Session.Txn or Hold.Txn.
type txnFunc func(ctx context.Context, ops ...any) ([]zk.MultiResponse, error)

// told checks a transaction's report against the server: now is what
// the caller's read-back, sent at once on the same session, found; later
// is read once the session's writer is idle. A report of "not applied"
// (ctx's error alone, an *OpError) and a read-back that found node absent
// must both stay true.
func told(t *testing.T, s *zklock.Session, err error, now bool, node string) {
	t.Helper()
	eventually(t, 10*time.Second, "the writer idle", func() bool { return zklock.WriterIdleForTest(s) })
	time.Sleep(100 * time.Millisecond) // a write sent again would be out by now
	later := existsSynced(t, s.Conn(), node)
	notApplied := err != nil && !errors.Is(err, zklock.ErrOutcomeUnknown)
	switch {
	case notApplied && later:
		t.Errorf("told %v (not applied), yet the transaction was applied", err)
	case !now && later:
		t.Errorf("told %v, read back 'not applied', and the transaction was applied after that", err)
	}
}

// readBack reads node on s's connection, the caller's next request, and
// closes queued once the request is (about to be) handed over.
func readBack(s *zklock.Session, node string, queued chan<- struct{}) <-chan bool {
	found := make(chan bool, 1)
	go func() {
		close(queued)
		ok, _, _ := s.Conn().Exists(node)
		found <- ok
	}()
	return found
}

// Item 1 of the fifth review: a transaction whose ctx ends while its batch
// is out, the batch refused for another write's op (a neighbour's stale
// version). Before the fix its caller was told ErrOutcomeUnknown, read
// back "not applied", and the writer then sent the transaction again,
// alone, and it was applied (every run).
func TestTxnUnknownIsNeverSentAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a drop and a reconnection, about 3 s")
	}
	for _, kind := range []string{"Session.Txn", "Hold.Txn"} {
		t.Run(kind, func(t *testing.T) {
			s := connect(t, zktest.Servers(t))
			h, dir := heldLock(t, s)
			if err := zkCreateAll(s.Conn(), dir+"/b"); err != nil {
				t.Fatal(err)
			}
			txn := txnFunc(s.Txn)
			if kind == "Hold.Txn" {
				txn = h.Txn
			}
			for round := range 3 {
				node := fmt.Sprintf("%s/a%d", dir, round)
				let := zklock.HoldWriterForTest()
				ctx, cancel := context.WithCancel(context.Background())
				got := make(chan error, 1)
				go func() {
					_, err := txn(ctx, &zk.CreateRequest{Path: node, Acl: anyone})
					got <- err
				}()
				eventually(t, 5*time.Second, "the transaction queued", func() bool { return zklock.QueuedWritesForTest(s) == 1 })
				stale := make(chan error, 1)
				go func() {
					_, err := s.Txn(context.Background(), &zk.SetDataRequest{Path: dir + "/b", Version: 7})
					stale <- err
				}()
				eventually(t, 5*time.Second, "the stale write queued", func() bool { return zklock.QueuedWritesForTest(s) == 2 })
				var once atomic.Bool
				queued := make(chan struct{})
				zklock.SetWriteHook(s, func(op int32, _ []byte) error {
					if op == zklock.OpMulti && once.CompareAndSwap(false, true) {
						cancel() // ctx ends with the batch on its way out
						// Let the caller's read-back, if Txn returned before
						// this multi is written, queue behind it (a Txn
						// that waits for its request to be written cannot
						// return meanwhile: then this waits in vain).
						select {
						case <-queued:
							time.Sleep(20 * time.Millisecond)
						case <-time.After(300 * time.Millisecond):
						}
					}
					return nil
				})
				let()
				err := <-got
				now := <-readBack(s, node, queued)
				zklock.SetWriteHook(s, nil)
				if e := <-stale; !errors.Is(e, zk.ErrBadVersion) {
					t.Fatalf("the stale write: %v", e)
				}
				told(t, s, err, now, node)
				cancel()
			}
		})
	}
}

// A container create in a transaction: the server applies it, but answers
// the multi with a reply go-zookeeper cannot read (zk.ErrAPIError and the
// results before it: memzk's TestMultiFlags pins the server's answer).
// Before the fix Txn sent it and told its caller the server refused it,
// nothing applied, while the container stood. A multi cannot carry one:
// ErrInvalidOp, nothing sent.
func TestTxnContainerRefusedBeforeSending(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	h, dir := heldLock(t, s)
	for _, txn := range []txnFunc{s.Txn, h.Txn} {
		node := dir + "/container"
		_, err := txn(ctxT(t, 10*time.Second), &zk.CreateRequest{Path: node, Acl: anyone, Flags: zk.FlagContainer})
		applied := existsSynced(t, s.Conn(), node)
		if !errors.Is(err, zklock.ErrInvalidOp) || applied {
			t.Fatalf("Txn with a container create: %v, applied %v; want ErrInvalidOp, not sent", err, applied)
		}
	}
}

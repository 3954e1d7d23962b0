package zklock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

var anyone = zk.WorldACL(zk.PermAll)

// heldLock returns the hold of a lock on a fresh path, and a data
// directory beside it for the transactions to write in.
func heldLock(t *testing.T, s *zklock.Session) (h *zklock.Hold, dir string) {
	t.Helper()
	h, dir, _ = heldLockOf(t, s)
	return h, dir
}

// heldLockOf is heldLock that also returns the lock.
func heldLockOf(t *testing.T, s *zklock.Session) (h *zklock.Hold, dir string, l *zklock.Lock) {
	t.Helper()
	p := zktest.Path(t)
	dir = p + "-data"
	if err := zkCreateAll(s.Conn(), dir); err != nil {
		t.Fatal(err)
	}
	l = newLock(t, s, p+"/lock")
	h, err := l.Acquire(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return h, dir, l
}

// existsSynced reports whether path exists, as the leader sees it after a
// sync on conn.
func existsSynced(t *testing.T, conn *zk.Conn, path string) bool {
	t.Helper()
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	return exists(t, conn, path)
}

func TestTxnApplies(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	h, dir := heldLock(t, s)
	ctx := ctxT(t, 20*time.Second)
	res, err := h.Txn(ctx,
		&zk.CreateRequest{Path: dir + "/a", Data: []byte("1"), Acl: anyone},
		&zk.SetDataRequest{Path: dir + "/a", Data: []byte("2"), Version: 0},
		&zk.CheckVersionRequest{Path: dir + "/a", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].String != dir+"/a" || res[1].Stat == nil || res[1].Stat.Version != 1 {
		t.Fatalf("responses %+v", res)
	}
	data, _, err := s.Conn().Get(dir + "/a")
	if err != nil || string(data) != "2" {
		t.Fatalf("data %q, %v", data, err)
	}
	// No ops: a confirmation of the hold at the server.
	if res, err := h.Txn(ctx); err != nil || len(res) != 0 {
		t.Fatalf("empty Txn: %v, %v", res, err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Txn(ctx, &zk.DeleteRequest{Path: dir + "/a", Version: -1}); !errors.Is(err, zklock.ErrNotHeld) {
		t.Fatalf("Txn after Release: %v, want ErrNotHeld", err)
	}
}

// A hold that is over at the server while the client has not noticed:
// its node is deleted from another session, and the client's "known
// lost" fast path is switched off, so that the transaction reaches the
// server whatever the client knows by then. The server must refuse it
// whole. The control shows the same write lands without the guard, so
// the refusal is the guard's doing.
func TestTxnStaleHoldRefusedAtServer(t *testing.T) {
	defer zklock.SetTxnSkipLostCheck(true)()
	s := connect(t, zktest.Servers(t))
	other := connect(t, zktest.Servers(t))
	h, dir := heldLock(t, s)
	ctx := ctxT(t, 20*time.Second)
	node := h.Node()
	if err := other.Conn().Delete(node, -1); err != nil {
		t.Fatal(err)
	}
	ops := []any{
		&zk.CreateRequest{Path: dir + "/stale", Data: []byte("x"), Acl: anyone},
		&zk.SetDataRequest{Path: dir, Data: []byte("stale"), Version: -1},
	}
	_, err := h.Txn(ctx, ops...)
	if !errors.Is(err, zklock.ErrStaleHold) || !errors.Is(err, zklock.ErrLockLost) {
		t.Fatalf("stale Txn: %v, want ErrStaleHold and ErrLockLost", err)
	}
	if existsSynced(t, other.Conn(), dir+"/stale") {
		t.Fatal("a stale holder's create landed")
	}
	if data, _, _ := other.Conn().Get(dir); len(data) != 0 {
		t.Fatalf("a stale holder's set landed: %q", data)
	}
	select {
	case <-h.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the hold was not ended after the server called it stale")
	}
	if err := h.Err(); !errors.Is(err, zklock.ErrNodeDeleted) {
		t.Errorf("hold's error %v, want ErrNodeDeleted", err)
	}

	t.Run("control: without the guard the write lands", func(t *testing.T) {
		if _, err := s.Conn().Multi(ops...); err != nil {
			t.Fatalf("unguarded multi: %v", err)
		}
		if !existsSynced(t, other.Conn(), dir+"/stale") {
			t.Fatal("the unguarded create did not land: the scene does not test the guard")
		}
	})
}

// A revocation request writes the holder's node (its version goes up):
// the holder still holds, and its guarded writes still land.
func TestTxnSurvivesWriteToOwnNode(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	other := connect(t, zktest.Servers(t))
	h, dir := heldLock(t, s)
	if _, err := other.Conn().Set(h.Node(), []byte("__REVOKE__"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Txn(ctxT(t, 20*time.Second), &zk.CreateRequest{Path: dir + "/after-revoke", Acl: anyone}); err != nil {
		t.Fatalf("Txn after a data write to the holder's node: %v", err)
	}
	select {
	case <-h.Lost():
		t.Fatalf("hold lost on a data write: %v", h.Err())
	default:
	}
}

// One failing op fails the transaction whole, and says which op it was.
func TestTxnOpError(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	h, dir := heldLock(t, s)
	res, err := h.Txn(ctxT(t, 20*time.Second),
		&zk.CreateRequest{Path: dir + "/first", Acl: anyone},
		&zk.DeleteRequest{Path: dir + "/missing", Version: -1},
		&zk.CreateRequest{Path: dir + "/third", Acl: anyone})
	var oe *zklock.OpError
	if !errors.As(err, &oe) || oe.Index != 1 || oe.Path != dir+"/missing" || !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("Txn: %v, want *OpError at op 1 wrapping zk.ErrNoNode", err)
	}
	if errors.Is(err, zklock.ErrLockLost) || errors.Is(err, zklock.ErrOutcomeUnknown) {
		t.Fatalf("an op's refusal reads as a loss or an unknown outcome: %v", err)
	}
	if len(res) != 3 || res[1].Error == nil {
		t.Fatalf("responses %+v", res)
	}
	if existsSynced(t, s.Conn(), dir+"/first") {
		t.Fatal("op 0 landed although op 1 failed")
	}
	select {
	case <-h.Lost():
		t.Fatal("an op's failure ended the hold")
	default:
	}
}

// A hold the client knows is lost is refused without a request.
func TestTxnKnownLost(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	other := connect(t, zktest.Servers(t))
	h, dir := heldLock(t, s)
	if err := other.Conn().Delete(h.Node(), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("deletion not noticed")
	}
	before := zklock.Written(s, zklock.OpMulti)
	_, err := h.Txn(ctxT(t, 20*time.Second), &zk.CreateRequest{Path: dir + "/x", Acl: anyone})
	if !errors.Is(err, zklock.ErrLockLost) || !errors.Is(err, zklock.ErrNodeDeleted) {
		t.Fatalf("Txn on a lost hold: %v", err)
	}
	if n := zklock.Written(s, zklock.OpMulti) - before; n != 0 {
		t.Fatalf("%d multi requests sent for a hold known lost", n)
	}
}

// ctx ends while the request is being written: Txn returns once it is
// on the wire (so that a read-back goes after it), the outcome unknown
// (ctx's error), and it lands. The write is held a second after the
// cancel, for Txn to see its ctx end before the answer: with 50 ms a
// loaded make test's Txn was not scheduled in time, met the answer too,
// and returned it (nil, true, but not this test's case).
func TestTxnContextEndsInFlight(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	h, dir := heldLock(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	zklock.SetWriteHook(s, func(op int32, _ []byte) error {
		if op == zklock.OpMulti {
			cancel()
			time.Sleep(time.Second) // Txn sees its ctx end before the multi is written
		}
		return nil
	})
	defer zklock.SetWriteHook(s, nil)
	_, err := h.Txn(ctx, &zk.CreateRequest{Path: dir + "/late", Acl: anyone})
	if err == nil && exists(t, s.Conn(), dir+"/late") {
		// Once the multi is on the wire, Txn tells its answer if it has
		// come (writes.Queue.Await): true, but not this test's path. A
		// loaded make test's race lane woke Txn's goroutine only after the
		// answer was read, a second after the cancel.
		t.Skip("Txn's goroutine ran only after the transaction's answer was read, and told it (applied): the machine's delay; the scene needs Txn to run between the write and the answer")
	}
	if !errors.Is(err, zklock.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Txn: %v, want ErrOutcomeUnknown wrapping context.Canceled", err)
	}
	if !exists(t, s.Conn(), dir+"/late") {
		t.Fatal("a read-back sent after Txn returned was answered before the transaction")
	}
}

// The connection fails as the multi is written: the outcome is unknown.
func TestTxnConnectionLostInFlight(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	h, dir := heldLock(t, s)
	zklock.SetWriteHook(s, func(op int32, _ []byte) error {
		if op == zklock.OpMulti {
			return errors.New("injected: connection reset by peer")
		}
		return nil
	})
	_, err := h.Txn(ctxT(t, 20*time.Second), &zk.CreateRequest{Path: dir + "/cut", Acl: anyone})
	zklock.SetWriteHook(s, nil)
	if !errors.Is(err, zklock.ErrOutcomeUnknown) {
		t.Fatalf("Txn: %v, want ErrOutcomeUnknown", err)
	}
	if errors.Is(err, zklock.ErrLockLost) {
		t.Fatalf("an unknown outcome reads as a loss (nothing applied): %v", err)
	}
	// Let the reconnection settle before the session closes: a Close in
	// the first moments of a new connection can strand go-zookeeper's
	// goroutines (see wire.go's setWatches wait), which is not this test's
	// subject.
	eventually(t, 10*time.Second, "the session back", func() bool {
		_, err := s.Conn().Sync("/")
		return err == nil
	})
}

// Bad input: each case gets its error before anything is sent, and nothing
// panics.
func TestTxnBadInput(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	h, dir := heldLock(t, s)
	node := h.Node()
	ctx := ctxT(t, 20*time.Second)
	var nilCreate *zk.CreateRequest
	for _, c := range []struct {
		name string
		ops  []any
		want []error
	}{
		{"nil op", []any{nil}, []error{zklock.ErrInvalidOp}},
		{"typed nil", []any{nilCreate}, []error{zklock.ErrInvalidOp}},
		{"unsupported type", []any{"create /x"}, []error{zklock.ErrInvalidOp}},
		{"value, not pointer", []any{zk.DeleteRequest{Path: dir}}, []error{zklock.ErrInvalidOp}},
		{"relative path", []any{&zk.SetDataRequest{Path: "x"}}, []error{zklock.ErrInvalidOp, zklock.ErrInvalidPath}},
		{"trailing slash", []any{&zk.DeleteRequest{Path: dir + "/"}}, []error{zklock.ErrInvalidOp, zklock.ErrInvalidPath}},
		{"dot segment", []any{&zk.CheckVersionRequest{Path: dir + "/./a"}}, []error{zklock.ErrInvalidOp, zklock.ErrInvalidPath}},
		{"empty ACL", []any{&zk.CreateRequest{Path: dir + "/a"}}, []error{zklock.ErrInvalidOp}},
		{"TTL flags", []any{&zk.CreateRequest{Path: dir + "/a", Acl: anyone, Flags: 5}}, []error{zklock.ErrInvalidOp}},
		{"second op bad", []any{&zk.CreateRequest{Path: dir + "/a", Acl: anyone}, nil}, []error{zklock.ErrInvalidOp}},
		{"writes own node", []any{&zk.DeleteRequest{Path: node, Version: -1}}, []error{zklock.ErrInvalidOp}},
		{"sets own node", []any{&zk.SetDataRequest{Path: node, Version: -1}}, []error{zklock.ErrInvalidOp}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := zklock.Written(s, zklock.OpMulti)
			err := zktest.NoPanic(t, func() error { _, err := h.Txn(ctx, c.ops...); return err })
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Errorf("error %v, want %v", err, w)
				}
			}
			if n := zklock.Written(s, zklock.OpMulti) - before; n != 0 {
				t.Errorf("%d multi requests sent", n)
			}
		})
	}
	t.Run("too large for go-zookeeper's buffer", func(t *testing.T) {
		before := zklock.Written(s, zklock.OpMulti)
		_, err := h.Txn(ctx, &zk.SetDataRequest{Path: dir, Data: make([]byte, 2<<20), Version: -1})
		if !errors.Is(err, zklock.ErrInvalidOp) || errors.Is(err, zklock.ErrOutcomeUnknown) {
			t.Fatalf("%v, want ErrInvalidOp", err)
		}
		if n := zklock.Written(s, zklock.OpMulti) - before; n != 0 {
			t.Errorf("%d multi requests sent", n)
		}
		if _, err := h.Txn(ctx); err != nil {
			t.Fatalf("the hold after a refused large transaction: %v", err)
		}
	})
	t.Run("sequential create under a slash", func(t *testing.T) {
		res, err := h.Txn(ctx, &zk.CreateRequest{Path: dir + "/", Acl: anyone, Flags: zk.FlagSequence})
		if err != nil || !strings.HasPrefix(res[0].String, dir+"/") {
			t.Fatalf("%v, %v", res, err)
		}
	})
	t.Run("check of own node", func(t *testing.T) {
		if _, err := h.Txn(ctx, &zk.CheckVersionRequest{Path: node, Version: 0}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("nil context", func(t *testing.T) {
		//lint:ignore SA1012 a nil context is the bad input under test
		if _, err := h.Txn(nil, &zk.CreateRequest{Path: dir + "/a", Acl: anyone}); !errors.Is(err, zklock.ErrNilContext) { //nolint:staticcheck
			t.Fatal(err)
		}
	})
	t.Run("ended context", func(t *testing.T) {
		if _, err := h.Txn(zktest.Cancelled(), &zk.CreateRequest{Path: dir + "/a", Acl: anyone}); !errors.Is(err, context.Canceled) || errors.Is(err, zklock.ErrOutcomeUnknown) {
			t.Fatalf("%v, want context.Canceled, not sent", err)
		}
	})
	t.Run("nil hold", func(t *testing.T) {
		var nh *zklock.Hold
		if _, err := nh.Txn(ctx); !errors.Is(err, zklock.ErrNil) {
			t.Fatal(err)
		}
	})
	t.Run("closed lock", func(t *testing.T) {
		// Close ended the lock's hold: the hold guards nothing.
		h2, _, l2 := heldLockOf(t, s)
		l2.Close()
		before := zklock.Written(s, zklock.OpMulti)
		if _, err := h2.Txn(ctx); !errors.Is(err, zklock.ErrLockLost) || !errors.Is(err, zklock.ErrClosed) {
			t.Fatal(err)
		}
		if n := zklock.Written(s, zklock.OpMulti) - before; n != 0 {
			t.Errorf("%d multi requests sent", n)
		}
	})
	t.Run("closed session", func(t *testing.T) {
		s2 := connect(t, zktest.Servers(t))
		h2, _ := heldLock(t, s2)
		s2.Close()
		if _, err := h2.Txn(ctx); !errors.Is(err, zklock.ErrSessionClosed) {
			t.Fatal(err)
		}
	})
}

// A request given as a value, not a pointer, is refused saying what to
// write instead (issue 31, seam 6). Go cannot refuse it at compile time
// while Txn takes go-zookeeper's ...any; before, the error only said the
// type was unsupported.
func TestTxnValueOpSaysPassAPointer(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	h, err := newLock(t, s, zktest.Path(t)).Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	_, err = h.Txn(ctxT(t, 10*time.Second), zk.CreateRequest{Path: "/x", Acl: zk.WorldACL(zk.PermAll)})
	if !errors.Is(err, zklock.ErrInvalidOp) || !strings.Contains(err.Error(), "pass a pointer, &zk.CreateRequest{...}") {
		t.Fatalf("Txn with a value: %v", err)
	}
}

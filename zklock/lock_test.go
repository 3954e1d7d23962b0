package zklock_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

func TestAcquireRelease(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	p := zktest.Path(t)
	l := newLock(t, s, p, zklock.WithLabel("worker-7"))
	ctx := ctxT(t, 10*time.Second)

	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !nodeName.MatchString(path.Base(h.Node())) || path.Dir(h.Node()) != p {
		t.Fatalf("node %q not in Curator's form under %s", h.Node(), p)
	}
	if h.Token() <= 0 {
		t.Fatalf("token = %d", h.Token())
	}
	select {
	case <-h.Lost():
		t.Fatal("Lost closed on a fresh hold")
	default:
	}
	if err := h.Err(); err != nil {
		t.Fatalf("Err on a fresh hold: %v", err)
	}
	ps, err := l.Participants(ctx)
	if err != nil || len(ps) != 1 || !ps[0].Holder || ps[0].Node != path.Base(h.Node()) {
		t.Fatalf("participants = %+v, %v", ps, err)
	}
	var d struct {
		Host  string
		Pid   int
		Label string
	}
	if err := json.Unmarshal(ps[0].Data, &d); err != nil || d.Pid != os.Getpid() || d.Label != "worker-7" {
		t.Fatalf("node data %s: %+v %v", ps[0].Data, d, err)
	}
	if h2, err := l.Acquire(ctx); !errors.Is(err, zklock.ErrAlreadyHeld) || h2 != nil {
		t.Fatalf("second Acquire: %v, %v, want ErrAlreadyHeld", h2, err)
	}
	if _, ok, err := l.TryAcquire(ctx); ok || !errors.Is(err, zklock.ErrAlreadyHeld) {
		t.Fatalf("TryAcquire while held: %v, %v, want ErrAlreadyHeld", ok, err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); !errors.Is(err, zklock.ErrNotHeld) {
		t.Fatalf("second Release: %v, want ErrNotHeld", err)
	}
	// The released hold is over: it guards nothing any more, and Release
	// does not report it lost.
	if _, err := h.Txn(ctx); !errors.Is(err, zklock.ErrNotHeld) {
		t.Fatalf("Txn after release: %v, want ErrNotHeld", err)
	}
	select {
	case <-h.Lost():
		t.Fatal("Release closed Lost")
	default:
	}
	eventually(t, 5*time.Second, "node deleted", func() bool {
		return len(children(t, s.Conn(), p)) == 0
	})
}

// Five sessions queue one after another; the lock goes to them in queue
// order, each exactly once.
func TestFIFO(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 30*time.Second)
	holder := newLock(t, connect(t, servers), p)
	hh, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		l := newLock(t, connect(t, servers), p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := l.Acquire(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			if err := h.Release(); err != nil {
				t.Error(err)
			}
		}()
		// Wait until waiter i is queued before starting the next one.
		eventually(t, 5*time.Second, "waiter queued", func() bool {
			return len(children(t, holder.Session().Conn(), p)) == i+2
		})
	}
	if err := hh.Release(); err != nil {
		t.Fatal(err)
	}
	zktest.Wait(t, "the waiters", &wg)
	if len(order) != n {
		t.Fatalf("order = %v", order)
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("granted out of queue order: %v", order)
		}
	}
}

// Each waiter watches only its predecessor: one watch per session, and
// each node watched by at most one waiter besides its owner.
func TestHerdAvoidance(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 30*time.Second)
	const n = 6
	locks := make([]*zklock.Lock, n)
	for i := range locks {
		locks[i] = newLock(t, connect(t, servers), p)
	}
	h0, err := locks[0].Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var acquired atomic.Int32
	holds := make([]atomic.Pointer[zklock.Hold], n)
	for i, l := range locks[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := l.Acquire(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			holds[i+1].Store(h)
			acquired.Add(1)
		}()
	}
	// The holder arms its own-node watch once its hold has lasted the
	// lease's bound (a quarter of the session timeout): until then only
	// the waiters watch.
	eventually(t, 10*time.Second, "all queued and watching", func() bool {
		w := watchesBySession(t, p+"/")
		return len(children(t, locks[0].Session().Conn(), p)) == n && len(w) == n
	})
	for sid, c := range watchesBySession(t, p+"/") {
		if c != 1 {
			t.Errorf("session %x holds %d watches under the lock path, want 1", sid, c)
		}
	}
	// The holder's node is watched by the holder and by exactly one waiter.
	if got := watchersOf(t, h0.Node()); got != 2 {
		t.Errorf("holder's node has %d watchers, want 2 (holder + next waiter)", got)
	}
	if err := h0.Release(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "one waiter woken", func() bool { return acquired.Load() == 1 })
	time.Sleep(100 * time.Millisecond)
	if got := acquired.Load(); got != 1 {
		t.Fatalf("one release woke %d acquisitions", got)
	}
	for i := range holds {
		if h := holds[i].Swap(nil); h != nil {
			if err := h.Release(); err != nil {
				t.Error(err)
			}
		}
	}
	// Release the rest as they come.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for {
		select {
		case <-done:
			for i := range holds {
				if h := holds[i].Swap(nil); h != nil {
					_ = h.Release()
				}
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
		for i := range holds {
			if h := holds[i].Swap(nil); h != nil {
				_ = h.Release()
			}
		}
	}
}

func TestCancelAndTimeoutLeaveNoNode(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	holder := newLock(t, connect(t, servers), p)
	hh, err := holder.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	other := newLock(t, connect(t, servers), p)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if h, err := other.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) || h != nil {
		t.Fatalf("Acquire past deadline: %v, %v", h, err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel2() }()
	if h, err := other.Acquire(ctx2); !errors.Is(err, context.Canceled) || h != nil {
		t.Fatalf("cancelled Acquire: %v, %v", h, err)
	}
	h, ok, err := other.TryAcquire(ctxT(t, 5*time.Second))
	if ok || err != nil || h != nil {
		t.Fatalf("TryAcquire on a held lock = %v, %v, %v", h, ok, err)
	}
	eventually(t, 5*time.Second, "only the holder's node left", func() bool {
		return len(children(t, holder.Session().Conn(), p)) == 1
	})
	// The failed attempts poisoned nothing.
	if err := hh.Release(); err != nil {
		t.Fatal(err)
	}
	// Release does not wait for the server to apply the delete, so the
	// other session may need a moment to see the lock free.
	eventually(t, 5*time.Second, "TryAcquire on a free lock", func() bool {
		h, ok, err = other.TryAcquire(ctxT(t, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestTokensIncrease(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	a := newLock(t, connect(t, servers), p)
	b := newLock(t, connect(t, servers), p)
	ctx := ctxT(t, 20*time.Second)
	var last int64
	for i := 0; i < 20; i++ {
		l := a
		if i%3 == 0 {
			l = b
		}
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if tok := h.Token(); tok <= last {
			t.Fatalf("token %d after %d", tok, last)
		} else {
			last = tok
		}
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	}
}

// Many sessions, and many acquire/release cycles on each, with pipelined
// creates and deletes: never two holders at once.
func TestPipelinedExclusion(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 60*time.Second)
	var inside, maxInside atomic.Int32
	var lastToken atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		l := newLock(t, connect(t, servers), p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 25; j++ {
				h, err := l.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if n := inside.Add(1); n > maxInside.Load() {
					maxInside.Store(n)
				}
				if tok := h.Token(); tok <= lastToken.Load() {
					t.Errorf("token %d not above %d", tok, lastToken.Load())
				} else {
					lastToken.Store(tok)
				}
				inside.Add(-1)
				if err := h.Release(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	zktest.Wait(t, "the acquirers", &wg)
	if maxInside.Load() != 1 {
		t.Fatalf("%d holders at once", maxInside.Load())
	}
}

func TestConcurrentMisuse(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	p := zktest.Path(t)
	holder := newLock(t, connect(t, zktest.Servers(t)), p)
	ctx := ctxT(t, 10*time.Second)
	hh, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l := newLock(t, s, p)
	resc := goAcquire(ctx, l)
	eventually(t, 5*time.Second, "waiter queued", func() bool { return len(children(t, s.Conn(), p)) == 2 })
	if h, err := l.Acquire(ctx); !errors.Is(err, zklock.ErrBusy) || h != nil {
		t.Fatalf("racing Acquire: %v, %v, want ErrBusy", h, err)
	}
	if h, ok, err := l.TryAcquire(ctx); !errors.Is(err, zklock.ErrBusy) || ok || h != nil {
		t.Fatalf("racing TryAcquire: %v, %v, %v, want ErrBusy", h, ok, err)
	}
	// (A Release racing the Acquire no longer exists: Release is a method
	// of the Hold, which the racing Acquire has not returned yet.)
	if err := hh.Release(); err != nil {
		t.Fatal(err)
	}
	r := <-resc
	if r.err != nil {
		t.Fatalf("first Acquire: %v", r.err)
	}
	if err := r.h.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestBadInput(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	for _, p := range []string{"", "rel/path", "/", "/a/", "/a//b", "/a/./b", "/a/../b", "/zookeeper/x", "/a\x00b", "/a\u0001"} {
		if _, err := zklock.New(s, p); !errors.Is(err, zklock.ErrInvalidPath) {
			t.Errorf("New(%q): %v, want ErrInvalidPath", p, err)
		}
	}
	if _, err := zklock.New(nil, "/x"); !errors.Is(err, zklock.ErrNilSession) {
		t.Errorf("New(nil session): %v", err)
	}
	if _, err := zklock.New(s, "/x", zklock.WithRecheckInterval(0)); !errors.Is(err, zklock.ErrInvalidOption) {
		t.Errorf("zero recheck: %v", err)
	}
	if _, err := zklock.NewSession(nil, nil); !errors.Is(err, zklock.ErrNilSession) {
		t.Errorf("NewSession(nil): %v", err)
	}
	if _, err := zklock.Connect(context.Background(), nil); !errors.Is(err, zklock.ErrInvalidOption) {
		t.Errorf("Connect(no servers): %v", err)
	}
	var nilLock *zklock.Lock
	if _, err := nilLock.Acquire(context.Background()); !errors.Is(err, zklock.ErrNil) {
		t.Errorf("Acquire on nil lock: %v, want ErrNil", err)
	}
	var nilHold *zklock.Hold
	if err := nilHold.Release(); !errors.Is(err, zklock.ErrNil) {
		t.Errorf("Release of a nil hold: %v, want ErrNil", err)
	}
	l := newLock(t, s, zktest.Path(t))
	//nolint:staticcheck // a nil context is the bad input under test
	if _, err := l.Acquire(nil); !errors.Is(err, zklock.ErrNilContext) {
		t.Errorf("Acquire(nil ctx): %v", err)
	}
	l.Close()
	if _, err := l.Acquire(context.Background()); !errors.Is(err, zklock.ErrClosed) {
		t.Errorf("Acquire after Close: %v", err)
	}
	s2 := connect(t, zktest.Servers(t))
	l2 := newLock(t, s2, zktest.Path(t))
	s2.Close()
	if _, err := l2.Acquire(context.Background()); !errors.Is(err, zklock.ErrSessionClosed) {
		t.Errorf("Acquire after session Close: %v", err)
	}
	if _, err := zklock.New(s2, "/x"); !errors.Is(err, zklock.ErrSessionClosed) {
		t.Errorf("New on closed session: %v", err)
	}
}

// go-zookeeper's zk.Lock and zklock queue on one path: each waits for the
// other, because both name nodes "...-lock-<seq>" and order by sequence.
func TestInteropWithZkLock(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 20*time.Second)
	other := connect(t, servers)
	if err := zkCreateAll(other.Conn(), p); err != nil {
		t.Fatal(err)
	}
	theirs := zk.NewLock(other.Conn(), p, zk.WorldACL(zk.PermAll))
	ours := newLock(t, connect(t, servers), p)

	if err := theirs.Lock(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ours.TryAcquire(ctx); ok || err != nil {
		t.Fatalf("TryAcquire while zk.Lock holds = %v, %v", ok, err)
	}
	acquired := make(chan error, 1)
	var h *zklock.Hold
	go func() {
		var err error
		h, err = ours.Acquire(ctx)
		acquired <- err
	}()
	eventually(t, 5*time.Second, "zklock queued behind zk.Lock", func() bool { return len(children(t, other.Conn(), p)) == 2 })
	select {
	case err := <-acquired:
		t.Fatalf("acquired while zk.Lock holds: %v", err)
	default:
	}
	if err := theirs.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-acquired; err != nil {
		t.Fatal(err)
	}
	// Now zk.Lock waits for us.
	locked := make(chan error, 1)
	go func() { locked <- theirs.Lock() }()
	eventually(t, 5*time.Second, "zk.Lock queued behind zklock", func() bool { return len(children(t, other.Conn(), p)) == 2 })
	select {
	case <-locked:
		t.Fatal("zk.Lock acquired while zklock holds")
	default:
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	if err := theirs.Unlock(); err != nil {
		t.Fatal(err)
	}
}

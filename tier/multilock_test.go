package tier_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
)

func newMulti(t testing.TB, members ...tier.Member) *tier.MultiLock {
	t.Helper()
	m, err := tier.NewMultiLock(members...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// nodesUnder counts the lock nodes under each of paths.
func nodesUnder(t testing.TB, conn *zk.Conn, paths ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, p := range paths {
		out[p] = len(children(t, conn, p))
	}
	return out
}

// waitNodes waits until each of paths has as many lock nodes as want says
// (a path not in want: none). A release queues its delete on the session
// (zklock pipelines it), so the count is awaited, not read once.
func waitNodes(t testing.TB, conn *zk.Conn, want map[string]int, paths ...string) {
	t.Helper()
	var got map[string]int
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = nodesUnder(t, conn, paths...)
		ok := true
		for _, p := range paths {
			ok = ok && got[p] == want[p]
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes %v, want %v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func assertNoNodes(t testing.TB, conn *zk.Conn, paths ...string) {
	t.Helper()
	waitNodes(t, conn, nil, paths...)
}

func memberErr(t testing.TB, err error) *tier.MemberError {
	t.Helper()
	var me *tier.MemberError
	if !errors.As(err, &me) {
		t.Fatalf("error %v is not a *tier.MemberError", err)
	}
	return me
}

// A mutex, the write side and the read side of read/write locks, given out
// of order: taken in path order as one hold, one node each, every member's
// hold and token visible through the held context, all nodes gone after
// Release, and a second Release refused.
func TestMultiLockAcquireRelease(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers)
	root := zktest.Path(t)
	pa, pb, pc := root+"/a", root+"/b", root+"/c"
	lc := newLock(t, s, pc)
	rwa, rwb := newRW(t, s, pa), newRW(t, s, pb)
	m := newMulti(t, lc, rwb.Reader(), rwa.Writer())
	if got, want := m.Paths(), []string{pa, pb, pc}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	ctx := ctxT(t, 20*time.Second)
	held, err := m.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := m.HoldCount(held); n != 1 {
		t.Fatalf("hold count %d", n)
	}
	if n := lc.HoldCount(held); n != 1 {
		t.Fatalf("mutex member hold count %d through the multi-lock's context", n)
	}
	if got := nodesUnder(t, s.Conn(), pa, pb, pc); got[pa] != 1 || got[pb] != 1 || got[pc] != 1 {
		t.Fatalf("nodes %v, want one per member", got)
	}
	toks, err := m.Tokens(held)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{pa, pb, pc} {
		if toks[p] <= 0 {
			t.Fatalf("tokens %v: none for %s", toks, p)
		}
	}
	if tok, err := lc.Token(held); err != nil || tok != toks[pc] {
		t.Fatalf("member's own Token %d, %v; Tokens says %d", tok, err, toks[pc])
	}
	// A writer of another session waits for our read member.
	other := newRW(t, connect(t, servers), pb)
	if _, ok, err := other.TryLock(ctx); ok || err != nil {
		t.Fatalf("foreign writer got in past our read member: %v %v", ok, err)
	}
	if err := m.Release(held); err != nil {
		t.Fatal(err)
	}
	if context.Cause(held) == nil {
		t.Fatal("held context not cancelled by Release")
	}
	if err := m.Release(held); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("second Release: %v, want ErrNotHolder", err)
	}
	if _, err := m.Tokens(held); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("Tokens after Release: %v", err)
	}
	assertNoNodes(t, s.Conn(), pa, pb, pc)
}

// All or nothing. A member held elsewhere makes the acquisition end with
// ctx (TryAcquire: false), naming that member, with the members before it
// released and no node of ours anywhere; a closed member likewise.
func TestMultiLockAllOrNothing(t *testing.T) {
	servers := zktest.Servers(t)
	s, o := connect(t, servers), connect(t, servers)
	root := zktest.Path(t)
	pa, pb, pc := root+"/a", root+"/b", root+"/c"
	la, lb, lc := newLock(t, s, pa), newLock(t, s, pb), newLock(t, s, pc)
	m := newMulti(t, lc, lb, la)
	ctx := ctxT(t, 20*time.Second)

	ob := newLock(t, o, pb)
	heldB, err := ob.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = m.Acquire(short)
	if !errors.Is(err, context.DeadlineExceeded) || memberErr(t, err).Path != pb {
		t.Fatalf("Acquire with %s taken: %v, want the deadline at %s", pb, err, pb)
	}
	waitNodes(t, s.Conn(), map[string]int{pb: 1}, pa, pb, pc) // only the other session's
	if la.HoldCount(ctx) != 0 || la.HoldCount(short) != 0 {
		t.Fatal("member a still counted")
	}
	if _, ok, err := m.TryAcquire(ctx); ok || err != nil {
		t.Fatalf("TryAcquire with %s taken: %v, %v", pb, ok, err)
	}
	waitNodes(t, s.Conn(), map[string]int{pb: 1}, pa, pb, pc)
	// Member a must be free again: the other session takes it at once.
	oa := newLock(t, o, pa)
	if h, ok, err := oa.TryAcquire(ctx); !ok || err != nil {
		t.Fatalf("member a left held: %v %v", ok, err)
	} else if err := oa.Release(h); err != nil {
		t.Fatal(err)
	}
	if err := ob.Release(heldB); err != nil {
		t.Fatal(err)
	}

	// A closed member (the last in order) stops the acquisition after the
	// others were taken: they are given back.
	if err := lc.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = m.Acquire(ctx)
	if !errors.Is(err, tier.ErrClosed) || memberErr(t, err).Path != pc {
		t.Fatalf("Acquire with %s closed: %v", pc, err)
	}
	assertNoNodes(t, s.Conn(), pa, pb, pc)
	if h, err := tier.NewMultiLock(la, lb); err != nil {
		t.Fatal(err)
	} else if held, ok, err := h.TryAcquire(ctx); !ok || err != nil {
		t.Fatalf("members a, b not free after the closed member's failure: %v %v", ok, err)
	} else if err := h.Release(held); err != nil {
		t.Fatal(err)
	}
}

// A member taken first is lost (its node deleted by another client) while
// the acquisition waits for a later one: the wait ends at once with the
// lost member's error, not at ctx's deadline, and nothing is left behind.
func TestMultiLockLossWhileAcquiring(t *testing.T) {
	servers := zktest.Servers(t)
	s, o := connect(t, servers), connect(t, servers)
	root := zktest.Path(t)
	pa, pb := root+"/a", root+"/b"
	m := newMulti(t, newLock(t, s, pa), newLock(t, s, pb))
	ctx := ctxT(t, 20*time.Second)
	ob := newLock(t, o, pb)
	heldB, err := ob.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Release(heldB)

	done := make(chan error, 1)
	go func() {
		_, err := m.Acquire(ctx) // ctx lasts 20 s
		done <- err
	}()
	eventually(t, 10*time.Second, "a taken and b queued", func() bool {
		got := nodesUnder(t, o.Conn(), pa, pb)
		return got[pa] == 1 && got[pb] == 2
	})
	kids := children(t, o.Conn(), pa)
	if err := o.Conn().Delete(pa+"/"+kids[0], -1); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire still waiting for b after a was lost")
	}
	if !errors.Is(err, tier.ErrLockLost) || !errors.Is(err, tier.ErrNodeDeleted) || memberErr(t, err).Path != pa {
		t.Fatalf("Acquire: %v, want a's loss", err)
	}
	if ctx.Err() != nil {
		t.Fatal("ended by the deadline, not by the loss")
	}
	waitNodes(t, o.Conn(), map[string]int{pb: 1}, pa, pb) // only the other session's
}

// A member's node deleted by another client ends the whole hold: the held
// context is cancelled with a *MemberError naming that member and wrapping
// ErrLockLost and ErrNodeDeleted, and Release gives back the rest.
//
// The sub-test "chained" is why the multi-lock watches every member: a
// member acquired with the held context of the one before does not end
// when that one is lost (a held context has its parent's values but not its
// cancellation).
func TestMultiLockMemberLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out a member's loss, about 2 s")
	}
	servers := zktest.Servers(t)
	s, o := connect(t, servers), connect(t, servers)
	t.Run("whole", func(t *testing.T) {
		root := zktest.Path(t)
		pa, pb, pc := root+"/a", root+"/b", root+"/c"
		m := newMulti(t, newLock(t, s, pa), newRW(t, s, pb).Writer(), newLock(t, s, pc))
		ctx := ctxT(t, 20*time.Second)
		held, err := m.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		kids := children(t, o.Conn(), pb)
		if err := o.Conn().Delete(pb+"/"+kids[0], -1); err != nil {
			t.Fatal(err)
		}
		select {
		case <-held.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the multi-lock's held context outlived its member b")
		}
		cause := context.Cause(held)
		if me := memberErr(t, cause); me.Path != pb || me.Kind != "write" ||
			!errors.Is(cause, tier.ErrLockLost) || !errors.Is(cause, tier.ErrNodeDeleted) {
			t.Fatalf("cause %v, want b's loss", cause)
		}
		if _, err := m.Acquire(held); !errors.Is(err, tier.ErrLockLost) {
			t.Fatalf("re-entry of a lost hold: %v", err)
		}
		if err := m.Release(held); !errors.Is(err, tier.ErrLockLost) {
			t.Fatalf("Release of a lost hold: %v, want ErrLockLost", err)
		}
		assertNoNodes(t, o.Conn(), pa, pb, pc)
	})
	t.Run("chained", func(t *testing.T) {
		root := zktest.Path(t)
		la, lb := newLock(t, s, root+"/a"), newLock(t, s, root+"/b")
		ctx := ctxT(t, 20*time.Second)
		ha, err := la.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		hb, err := lb.Acquire(ha)
		if err != nil {
			t.Fatal(err)
		}
		kids := children(t, o.Conn(), root+"/a")
		if err := o.Conn().Delete(root+"/a/"+kids[0], -1); err != nil {
			t.Fatal(err)
		}
		<-ha.Done()
		time.Sleep(100 * time.Millisecond) // a propagation would have happened by now
		if hb.Err() == nil {
			t.Log("as expected: b's held context, acquired with a's, survives a's loss")
		} else {
			t.Logf("b's held context ended with a's: %v (the multi-lock's watches are then redundant)", context.Cause(hb))
		}
		_ = lb.Release(hb)
		_ = la.Release(ha)
	})
}

// Re-entry: the multi-lock's held context re-enters it (a count, no new
// node); a member's held context passed in re-enters that member and takes
// the others; a write hold of an RWLock passed in lets its Reader member
// ride on the write node.
func TestMultiLockReentry(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers)
	root := zktest.Path(t)
	pa, pb := root+"/a", root+"/b"
	la, rwb := newLock(t, s, pa), newRW(t, s, pb)
	m := newMulti(t, la, rwb.Reader())
	ctx := ctxT(t, 20*time.Second)

	held, err := m.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, err := m.Acquire(held)
	if err != nil || again != held || m.HoldCount(held) != 2 {
		t.Fatalf("re-entry: %v, same context %v, count %d", err, again == held, m.HoldCount(held))
	}
	if err := m.Release(again); err != nil {
		t.Fatal(err)
	}
	if got := nodesUnder(t, s.Conn(), pa, pb); got[pa] != 1 || got[pb] != 1 || held.Err() != nil {
		t.Fatalf("after the inner Release: nodes %v, held %v", got, held.Err())
	}
	if err := m.Release(held); err != nil {
		t.Fatal(err)
	}

	// A held member a: re-entered, not waited for.
	ha, err := la.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ha, 5*time.Second)
	defer cancel()
	hm, err := m.Acquire(short)
	if err != nil {
		t.Fatalf("multi-lock with member a held by the caller: %v", err)
	}
	if n := la.HoldCount(hm); n != 2 {
		t.Fatalf("member a's count %d under the multi-lock, want 2", n)
	}
	if err := m.Release(hm); err != nil {
		t.Fatal(err)
	}
	if n := la.HoldCount(ha); n != 1 || ha.Err() != nil {
		t.Fatalf("member a after the multi-lock's Release: count %d, %v", n, ha.Err())
	}
	if err := la.Release(ha); err != nil {
		t.Fatal(err)
	}

	// A write hold of b: the Reader member rides on it.
	hw, err := rwb.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short2, cancel2 := context.WithTimeout(hw, 5*time.Second)
	defer cancel2()
	hm, err = m.Acquire(short2)
	if err != nil {
		t.Fatalf("multi-lock reading b under our write hold: %v", err)
	}
	if err := m.Release(hm); err != nil {
		t.Fatal(err)
	}
	if err := rwb.Release(hw); err != nil {
		t.Fatal(err)
	}
	assertNoNodes(t, s.Conn(), pa, pb)
}

// oppositeOrders runs two goroutines, each on a session of its own (two
// processes, as far as ZooKeeper is told), taking {a, b} and {b, a}
// rounds times. After each first member, a hook waits up to 200 ms for the
// other goroutine to take its first member too: the interleaving that
// deadlocks locks taken in the given order. A deadlock is both
// acquisitions ending at their deadline, or, with the members unordered,
// one ending at its deadline and the other then taking both just before
// its own (the first timeout broke the deadlock: on a loaded machine the
// two deadlines can fall that far apart). It returns the deadlocked rounds.
func oppositeOrders(t *testing.T, shared, unordered bool, rounds int) int {
	servers := zktest.Servers(t)
	root := zktest.Path(t)
	pa, pb := root+"/a", root+"/b"
	newMultiLock := tier.NewMultiLock
	if unordered {
		newMultiLock = tier.NewUnorderedMultiLockForTest
	}
	s1 := connect(t, servers)
	la1, lb1 := newLock(t, s1, pa), newLock(t, s1, pb)
	la2, lb2 := la1, lb1 // shared: one session, one *Lock per path (tier 1 gates)
	if !shared {
		s2 := connect(t, servers)
		la2, lb2 = newLock(t, s2, pa), newLock(t, s2, pb)
	}
	var sets [2]*tier.MultiLock
	var err error
	if sets[0], err = newMultiLock(la1, lb1); err != nil {
		t.Fatal(err)
	}
	if sets[1], err = newMultiLock(lb2, la2); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	firsts := map[*tier.MultiLock]int{} // rounds whose first member each set holds
	tier.SetMultiLockHookForTest(func(m *tier.MultiLock, i int) {
		if i != 0 {
			return
		}
		mu.Lock()
		firsts[m]++
		mu.Unlock()
		deadline := time.Now().Add(200 * time.Millisecond)
		for time.Now().Before(deadline) {
			mu.Lock()
			both := firsts[sets[0]] == firsts[sets[1]]
			mu.Unlock()
			if both {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	defer tier.SetMultiLockHookForTest(nil)

	deadlocks := 0
	for range rounds {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for g, m := range sets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				held, err := m.Acquire(ctx)
				if err != nil {
					errs[g] = err
					return
				}
				errs[g] = m.Release(held)
			}()
		}
		zktest.Wait(t, "the two sets", &wg)
		switch {
		case errors.Is(errs[0], context.DeadlineExceeded) && errors.Is(errs[1], context.DeadlineExceeded):
			deadlocks++
		case unordered && (errs[0] == nil) != (errs[1] == nil) &&
			(errors.Is(errs[0], context.DeadlineExceeded) || errors.Is(errs[1], context.DeadlineExceeded)):
			deadlocks++
		case errs[0] != nil || errs[1] != nil:
			t.Fatalf("round: %v; %v", errs[0], errs[1])
		}
		mu.Lock()
		firsts[sets[0]], firsts[sets[1]] = 0, 0
		mu.Unlock()
	}
	obs := connect(t, servers)
	assertNoNodes(t, obs.Conn(), pa, pb)
	return deadlocks
}

// Two callers taking overlapping sets in opposite orders, on two sessions
// and on one shared pair of locks, never deadlock: the multi-lock takes
// both in path order.
func TestMultiLockOppositeOrders(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: rounds in opposite orders, about 4 s")
	}
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "sessions", true: "shared"}[shared]
		t.Run(name, func(t *testing.T) {
			if n := oppositeOrders(t, shared, false, 10); n != 0 {
				t.Fatalf("%d of 10 rounds deadlocked", n)
			}
		})
	}
}

// The same rounds with the members taken in the order given deadlock: the
// check above can fail, and the sort is what passes it.
func TestMultiLockUnorderedDeadlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: rounds until a deadlock, about 6 s")
	}
	if n := oppositeOrders(t, false, true, 2); n == 0 {
		t.Fatal("no round deadlocked with the members in the given order")
	}
}

// A member lost after it was taken but before the hold is published (here:
// while the last member is being taken) is not missed: Acquire reports the
// loss and gives the rest back, or, if the loss reaches the multi-lock
// only after it published the hold, the held context ends with it. Either
// way the caller learns of it; what must never happen is a hold handed
// out whole whose member is already gone.
func TestMultiLockLossBeforePublish(t *testing.T) {
	servers := zktest.Servers(t)
	s, o := connect(t, servers), connect(t, servers)
	root := zktest.Path(t)
	pa, pb := root+"/a", root+"/b"
	m := newMulti(t, newLock(t, s, pa), newLock(t, s, pb))
	tier.SetMultiLockHookForTest(func(mm *tier.MultiLock, i int) {
		if mm != m || i != 1 {
			return
		}
		kids := children(t, o.Conn(), pa)
		if err := o.Conn().Delete(pa+"/"+kids[0], -1); err != nil {
			t.Error(err)
		}
		// Let the loss reach the multi-lock before it publishes: the
		// case the check before publication is for. A slower machine
		// only moves the test to the other (also checked) outcome.
		time.Sleep(500 * time.Millisecond)
	})
	defer tier.SetMultiLockHookForTest(nil)
	ctx := ctxT(t, 20*time.Second)
	held, err := m.Acquire(ctx)
	if err == nil {
		t.Log("the loss came after publication")
		select {
		case <-held.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("a hold whose member a was deleted is still whole")
		}
		err = context.Cause(held)
		_ = m.Release(held)
	}
	if me := memberErr(t, err); me.Path != pa || !errors.Is(err, tier.ErrNodeDeleted) {
		t.Fatalf("reported %v, want a's deletion", err)
	}
	assertNoNodes(t, o.Conn(), pa, pb)
}

package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// positionLog records what a position handler is told, and whether it was
// told anything after its Acquire returned.
type positionLog struct {
	mu       sync.Mutex
	got      []zklock.Position
	returned atomic.Bool
	late     atomic.Int32 // reports after Acquire returned
}

func (r *positionLog) handle(p zklock.Position) {
	if r.returned.Load() {
		r.late.Add(1)
	}
	r.mu.Lock()
	r.got = append(r.got, p)
	r.mu.Unlock()
}

func (r *positionLog) all() []zklock.Position {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func (r *positionLog) last() (zklock.Position, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) == 0 {
		return zklock.Position{}, false
	}
	return r.got[len(r.got)-1], true
}

// aheads is the sequence of Ahead values, consecutive repeats folded (a
// report can differ in Queued only).
func aheads(ps []zklock.Position) []int {
	var out []int
	for _, p := range ps {
		if len(out) == 0 || out[len(out)-1] != p.Ahead {
			out = append(out, p.Ahead)
		}
	}
	return out
}

// Three waiters queue behind a holder; each is told its place when its node
// is created, then every place it reaches as the holders ahead release, in
// order, ending with Leads, and nothing after its Acquire returned.
func TestPositionThreeWaiters(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 60*time.Second)
	holder := newLock(t, connect(t, servers), p)
	hh, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	var (
		logs  [n]positionLog
		locks [n]*zklock.Lock
		holds [n]*zklock.Hold
		nodes [n]string // each waiter's node once it holds
		done  [n]chan error
	)
	for j := range n {
		// A short re-check lets waiters further back see the queue move
		// (a mutex waiter watches only its predecessor).
		locks[j] = newLock(t, connect(t, servers), p,
			zklock.WithRecheckInterval(50*time.Millisecond), zklock.WithPositionHandler(logs[j].handle))
		done[j] = make(chan error, 1)
		go func() {
			h, err := locks[j].Acquire(ctx)
			logs[j].returned.Store(true)
			holds[j], nodes[j] = h, h.Node()
			done[j] <- err
		}()
		eventually(t, 10*time.Second, fmt.Sprintf("waiter %d's first report", j), func() bool {
			_, ok := logs[j].last()
			return ok
		})
		first, _ := logs[j].last()
		if first.Ahead != j+1 || first.Queued < j+2 || first.Holder != hh.Node() || first.Leads || first.Node == "" {
			t.Fatalf("waiter %d first report %+v, want %d ahead, holder %s", j, first, j+1, hh.Node())
		}
	}
	release := func(h *zklock.Hold) {
		t.Helper()
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	}
	release(hh)
	for k := range n {
		if err := <-done[k]; err != nil {
			t.Fatalf("waiter %d: %v", k, err)
		}
		for j := k + 1; j < n; j++ {
			eventually(t, 10*time.Second, fmt.Sprintf("waiter %d at %d", j, j-k), func() bool {
				last, _ := logs[j].last()
				return last.Ahead == j-k
			})
		}
		release(holds[k])
	}
	for j := range n {
		got := logs[j].all()
		want := []int{}
		for a := j + 1; a >= 0; a-- {
			want = append(want, a)
		}
		if a := aheads(got); !slices.Equal(a, want) {
			t.Errorf("waiter %d: ahead went %v, want %v (%+v)", j, a, want, got)
		}
		for i, pos := range got {
			if pos.Leads != (i == len(got)-1) {
				t.Errorf("waiter %d: report %d of %d has Leads %v", j, i, len(got), pos.Leads)
			}
			if pos.Node != nodes[j] {
				t.Errorf("waiter %d: report %d names node %s, held %s", j, i, pos.Node, nodes[j])
			}
			if i > 0 && pos == got[i-1] {
				t.Errorf("waiter %d: report %d repeats %+v", j, i, pos)
			}
		}
		if last := got[len(got)-1]; last.Ahead != 0 || last.Holder != nodes[j] {
			t.Errorf("waiter %d: last report %+v", j, last)
		}
		if late := logs[j].late.Load(); late != 0 {
			t.Errorf("waiter %d: %d reports after Acquire returned", j, late)
		}
	}
}

// Reporting costs no request: a waiter queued behind a holder sends the
// same requests, op by op, with a handler as without one.
func TestPositionNoExtraRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waiters counted op by op, about 4 s")
	}
	ops := map[string]int32{
		"create": zklock.OpCreate, "multi": zklock.OpMulti, "getChildren2": zklock.OpGetChildren2, "multiRead": zklock.OpMultiRead,
		"getData": zklock.OpGetData, "exists": zklock.OpExists, "delete": zklock.OpDelete,
	}
	run := func(t *testing.T, handler bool) map[string]int64 {
		servers := zktest.Servers(t)
		p := zktest.Path(t)
		ctx := ctxT(t, 30*time.Second)
		holder := newLock(t, connect(t, servers), p)
		hh, err := holder.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var log positionLog
		var opts []zklock.Option
		if handler {
			opts = append(opts, zklock.WithPositionHandler(log.handle))
		}
		s := connect(t, servers)
		w := newLock(t, s, p, opts...)
		done := goAcquire(ctx, w)
		// The waiter's watch on the holder's node is set (next to the
		// holder's own watch, armed once the hold has lasted the lease's
		// bound): the release will fire it.
		eventually(t, 10*time.Second, "waiter watching the holder", func() bool {
			return watchersOf(t, hh.Node()) == 2
		})
		if err := hh.Release(); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		// The hold's watch on its own node is set in the background, once
		// the hold has lasted the lease's bound.
		eventually(t, 10*time.Second, "the hold watching its node", func() bool {
			return watchersOf(t, r.h.Node()) == 1
		})
		sent := map[string]int64{}
		for name, op := range ops {
			sent[name] = zklock.Written(s, op)
		}
		if handler {
			got := log.all()
			if len(got) != 2 || got[0].Ahead != 1 || got[0].Leads || got[1].Ahead != 0 || !got[1].Leads {
				t.Errorf("reports %+v, want ahead 1, then leads", got)
			}
		}
		return sent
	}
	var with, without map[string]int64
	t.Run("without", func(t *testing.T) { without = run(t, false) })
	t.Run("with", func(t *testing.T) { with = run(t, true) })
	t.Logf("requests without a handler %v, with %v", without, with)
	for name := range ops {
		if with[name] != without[name] {
			t.Errorf("%s requests: %d with a handler, %d without", name, with[name], without[name])
		}
	}
}

// A handler is called only from inside Acquire, and has returned when
// Acquire returns: an Acquire given up while the queue keeps changing (re-checks every few milliseconds, a slow
// handler, nodes coming and going behind ours) is told nothing afterwards.
func TestPositionNothingAfterReturn(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ten rounds of a 200-ms Acquire, about 3 s")
	}
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 30*time.Second)
	holder := newLock(t, connect(t, servers), p)
	if _, err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	churnCtx, stopChurn := context.WithCancel(ctx)
	defer stopChurn()
	var churned sync.WaitGroup
	churned.Add(1)
	go func() { // contenders come and go behind the waiter: its Queued changes
		defer churned.Done()
		conn := connect(t, servers).Conn()
		for churnCtx.Err() == nil {
			n, err := conn.Create(p+"/churn-lock-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
			if err == nil {
				time.Sleep(time.Millisecond)
				_ = conn.Delete(n, -1)
			}
		}
	}()
	for round := range 10 {
		var log positionLog
		slow := func(pos zklock.Position) {
			log.handle(pos)
			time.Sleep(3 * time.Millisecond)
			if log.returned.Load() { // still running when Acquire returned
				log.late.Add(1)
			}
		}
		w := newLock(t, connect(t, servers), p,
			zklock.WithRecheckInterval(time.Millisecond), zklock.WithPositionHandler(slow))
		wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		h, err := w.Acquire(wctx)
		log.returned.Store(true)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || h != nil {
			t.Fatalf("round %d: Acquire: %v, want the deadline", round, err)
		}
		time.Sleep(50 * time.Millisecond) // the waiter winds down
		if late := log.late.Load(); late != 0 {
			t.Fatalf("round %d: %d reports after Acquire returned", round, late)
		}
		if len(log.all()) == 0 {
			t.Fatalf("round %d: no report", round)
		}
		w.Close()
	}
	stopChurn()
	zktest.Wait(t, "the churning contenders", &churned)
}

// Bad input and the calls that report nothing: a nil handler is no
// handler; TryAcquire never waits and reports nothing; an uncontended
// Acquire reports once, leading.
func TestPositionBadInput(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 20*time.Second)
	s := connect(t, servers)

	nilHandler := newLock(t, s, p, zklock.WithPositionHandler(nil))
	var nh *zklock.Hold
	if err := zktest.NoPanic(t, func() error { var err error; nh, err = nilHandler.Acquire(ctx); return err }); err != nil {
		t.Fatal(err)
	}
	if err := nh.Release(); err != nil {
		t.Fatal(err)
	}

	var log positionLog
	l := newLock(t, s, p, zklock.WithPositionHandler(log.handle))
	h, ok, err := l.TryAcquire(ctx)
	if !ok || err != nil {
		t.Fatalf("TryAcquire: %v, %v", ok, err)
	}
	if got := log.all(); len(got) != 0 {
		t.Fatalf("TryAcquire reported %+v", got)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	h, err = l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := zklock.Position{Node: h.Node(), Ahead: 0, Queued: 1, Holder: h.Node(), Leads: true}
	if got := log.all(); len(got) != 1 || got[0] != want {
		t.Fatalf("uncontended Acquire reported %+v, want [%+v]", got, want)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

// A semaphore's waiter is told its place in each queue it waits in: the
// semaphore's mutex (uncontended here: it leads at once), then the lease
// queue (a children watch, n holders), where Holder is the oldest lease.
func TestPositionSemaphore(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 20*time.Second)
	a, err := zklock.NewSemaphore(connect(t, servers), p, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	held, err := a.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	var log positionLog
	b, err := zklock.NewSemaphore(connect(t, servers), p, 1, zklock.WithPositionHandler(log.handle))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	done := make(chan *zklock.Lease, 1)
	go func() {
		le, err := b.Acquire(ctx, 1)
		if err != nil {
			t.Error(err)
		}
		done <- le
	}()
	eventually(t, 10*time.Second, "lease queue report", func() bool {
		last, _ := log.last()
		return path.Dir(last.Node) == p+"/leases"
	})
	heldNode := held.Nodes()[0]
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	le := <-done
	if le == nil {
		t.FailNow()
	}
	var mutex, leases []zklock.Position
	for _, pos := range log.all() {
		if path.Dir(pos.Node) == p+"/leases" {
			leases = append(leases, pos)
		} else {
			mutex = append(mutex, pos)
		}
	}
	// The mutex is most often free when b comes, so one report, leading;
	// under load the first acquirer's release of it may still be on its
	// way, and b reports its place behind that node first (make test run
	// 72). Every report is of the mutex's queue, and the last leads.
	if len(mutex) == 0 || len(mutex) > 2 || !mutex[len(mutex)-1].Leads || path.Dir(mutex[0].Node) != p+"/locks" {
		t.Errorf("mutex reports %+v, want one leading, or one queued then one leading", mutex)
	}
	if a := aheads(leases); !slices.Equal(a, []int{1, 0}) {
		t.Fatalf("lease ahead went %v, want [1 0] (%+v)", a, leases)
	}
	if last := leases[len(leases)-1]; !last.Leads || last.Node != le.Nodes()[0] || leases[0].Holder != heldNode {
		t.Fatalf("lease reports %+v; held %s, then %v", leases, heldNode, le.Nodes())
	}
	if err := le.Release(); err != nil {
		t.Fatal(err)
	}
}

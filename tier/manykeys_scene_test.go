package tier_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// Many keys on one registry (issue 15, item 3). The bounds are counts, not
// times: goroutines per held key, none per idle key, one znode and one
// watch per held key on the server. The figures (memory per key, time per
// key) come from BenchmarkManyKeys.

// maxGoroutinesPerHeldKey is the design bound: a held key runs the watch
// on its own node (zklock's watchOwn) and nothing else; 2 leaves room for
// one more per hold, never one per waiter or per idle key.
const maxGoroutinesPerHeldKey = 2

// manyKeys acquires n keys of r, workers at a time, and returns the holds.
func manyKeys(ctx context.Context, r *tier.Registry, n, workers int) ([]context.Context, error) {
	holds := make([]context.Context, n)
	err := parallel(n, workers, func(i int) error {
		h, err := r.Acquire(ctx, fmt.Sprintf("k%05d", i))
		holds[i] = h
		return err
	})
	return holds, err
}

// releaseAll releases holds, workers at a time, and counts the holds that
// were lost before their release (a lapsed lease under load ends them).
func releaseAll(r *tier.Registry, holds []context.Context, workers int) (int, error) {
	var lost atomic.Int64
	err := parallel(len(holds), workers, func(i int) error {
		if holds[i] == nil {
			return nil
		}
		err := r.Release(holds[i])
		if errors.Is(err, tier.ErrLockLost) {
			lost.Add(1)
			return nil
		}
		return err
	})
	return int(lost.Load()), err
}

// parallel runs fn(0..n-1) on workers goroutines and returns the first
// error. The workers have exited when it returns.
func parallel(n, workers int, fn func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// settledGoroutines waits for the goroutine count to stop changing (a
// release's pipelined delete and the own-node watch end shortly after
// Release returns) and returns it.
func settledGoroutines(t testing.TB, atMost int) int {
	t.Helper()
	n := runtime.NumGoroutine()
	deadline := time.Now().Add(10 * time.Second)
	for n > atMost && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// 1000 keys held at once on one registry: at most 2 goroutines, at most one
// znode and at most one watch per held key (what a hold lost to a lapsed
// lease under load drops is logged); once released, no goroutine,
// no lock node and no registry entry per idle key.
func TestManyKeysBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 1,000 keys held at once, about 11 s")
	}
	const n = 1000
	root := zktest.Path(t)
	s := connect(t, zktest.Servers(t))
	r, err := tier.NewRegistry(s, root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := ctxT(t, 90*time.Second)
	// Warm up: the session's own goroutines (event poll, lease renewer,
	// pipeline) are counted in the baseline, not per key.
	h, err := r.Acquire(ctx, "warm")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Release(h); err != nil {
		t.Fatal(err)
	}
	base := settledGoroutines(t, 0)

	holds, err := manyKeys(ctx, r, n, 32)
	if err != nil {
		t.Fatal(err)
	}
	// Counted once every acquisition has returned: the workers are gone.
	held := settledGoroutines(t, base+maxGoroutinesPerHeldKey*n) - base
	if held > maxGoroutinesPerHeldKey*n {
		t.Errorf("%d goroutines for %d held keys: %.2f per key, want at most %d",
			held, n, float64(held)/n, maxGoroutinesPerHeldKey)
	}
	if got := r.Len(); got != n {
		t.Errorf("Len = %d with %d keys held", got, n)
	}
	conn := s.Conn()
	nodes := 0
	for _, k := range children(t, conn, root) {
		nodes += len(children(t, conn, root+"/"+k))
	}
	if nodes > n {
		// Fewer is a hold lost to a lapsed lease under load, reported at
		// release; more is a key with two nodes.
		t.Errorf("%d lock nodes for %d held keys, want at most one each", nodes, n)
	}
	watches := 0
	for _, w := range watchesBySession(t, root+"/") {
		watches += w
	}
	if watches > n {
		t.Errorf("%d watches for %d held keys, want at most one each", watches, n)
	}
	t.Logf("%d held keys: %d goroutines (%.2f/key), %d lock nodes, %d watches", n, held, float64(held)/n, nodes, watches)

	lost, err := releaseAll(r, holds, 32)
	if err != nil {
		t.Fatal(err)
	}
	if lost > 0 {
		t.Logf("%d holds were lost before their release (the lease lapsed under load)", lost)
	}
	if got := r.Len(); got != 0 {
		t.Errorf("Len = %d once every key was released", got)
	}
	idle := settledGoroutines(t, base) - base
	if idle > 0 {
		t.Errorf("%d goroutines left for %d idle keys, want none", idle, n)
	}
	eventually(t, 10*time.Second, "the lock nodes to go", func() bool {
		left := 0
		for _, k := range children(t, conn, root) {
			left += len(children(t, conn, root+"/"+k))
		}
		return left == 0
	})
}

// keysRound is what one round of BenchmarkManyKeys measured.
type keysRound struct {
	acquire, release   time.Duration
	heapHeld, heapIdle int64 // over the heap before the round
	gHeld, gIdle       int   // goroutines over those before the round
	nodes, watches     int   // lock nodes and server watches while all were held
	lost               int
	reqAcq, reqRel     int64 // requests the server received while acquiring, releasing
}

// manyKeysRound acquires n keys on a fresh registry of s, holds them all,
// and releases them.
func manyKeysRound(b *testing.B, c *zkserver.Cluster, s *zklock.Session, n int) keysRound {
	ctx := context.Background()
	root := zktest.Path(b)
	r, err := tier.NewRegistry(s, root)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	h, err := r.Acquire(ctx, "warm")
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Release(h); err != nil {
		b.Fatal(err)
	}
	var m keysRound
	g0 := settledGoroutines(b, 0)
	h0 := heapInUse()
	w0, err := c.Counters(ctx)
	if err != nil {
		b.Fatal(err)
	}

	start := time.Now()
	holds, err := manyKeys(ctx, r, n, 32)
	if err != nil {
		b.Fatal(err)
	}
	m.acquire = time.Since(start)
	m.gHeld = settledGoroutines(b, g0+maxGoroutinesPerHeldKey*n) - g0
	m.heapHeld = heapInUse() - h0
	w1, err := c.Counters(ctx)
	if err != nil {
		b.Fatal(err)
	}
	m.watches = int(w1.WatchCount - w0.WatchCount)
	m.reqAcq = w1.PacketsReceived - w0.PacketsReceived - int64(c.Size()) // mntr counts itself
	for _, k := range children(b, s.Conn(), root) {
		m.nodes += len(children(b, s.Conn(), root+"/"+k))
	}

	start = time.Now()
	m.lost, err = releaseAll(r, holds, 32)
	if err != nil {
		b.Fatal(err)
	}
	m.release = time.Since(start)
	// The deletes are pipelined: wait until the server has them all,
	// polling its node count (each poll is one request, subtracted).
	var w2 zkserver.Counters
	polls := int64(0)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if w2, err = c.Counters(ctx); err != nil {
			b.Fatal(err)
		}
		polls++
		if w2.ZnodeCount <= w1.ZnodeCount-int64(n) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	m.reqRel = w2.PacketsReceived - w1.PacketsReceived - polls*int64(c.Size())
	holds = nil
	m.gIdle = settledGoroutines(b, g0) - g0
	m.heapIdle = heapInUse() - h0
	return m
}

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

package tier_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

func newSem(t testing.TB, s *zklock.Session, path string, n int, opts ...tier.Option) *tier.Semaphore {
	t.Helper()
	sem, err := tier.NewSemaphore(s, path, n, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sem.Close() })
	return sem
}

// Several sessions × goroutines taking 1 or 2 of 3 leases: the checker
// finds at most 3 in use and the leases used (peak 3); each process keeps
// no more lease nodes than its holders hold permits.
func TestSemMultiSession(t *testing.T) {
	const procs, goroutines, rounds, n = 3, 4, 15, 3
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	ctx := ctxT(t, 60*time.Second)
	obs := connect(t, servers)
	var rec recorder
	var wg sync.WaitGroup
	var overNodes atomic.Int32
	for p := range procs {
		s := connect(t, servers)
		sem := newSem(t, s, path, n)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				who := fmt.Sprintf("p%dg%d", p, g)
				rnd := rand.New(rand.NewPCG(uint64(p), uint64(g)))
				for range rounds {
					k := 1 + rnd.IntN(2)
					h, err := sem.Acquire(ctx, k)
					if err != nil {
						t.Error(err)
						return
					}
					rec.add(record{kind: recS, who: who, k: k})
					if got := sem.Permits(h); got != k {
						t.Errorf("Permits %d, want %d", got, k)
					}
					time.Sleep(time.Duration(rnd.IntN(2000)) * time.Microsecond)
					rec.add(record{kind: recSx, who: who, k: k})
					if err := sem.Release(h); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	// Meanwhile, lease nodes per session never exceed the local permits
	// in use (sampled).
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			kids, _, err := obs.Conn().Children(path + "/leases")
			if err == nil && len(kids) > n+1 { // n holders + the one creator under the mutex
				overNodes.Add(1)
			}
		}
	}()
	zktest.Wait(t, "the goroutines", &wg)
	close(stop)
	<-sampled
	bad, peak := checkSem(rec.log, n)
	t.Logf("%d holds over %d sessions x %d goroutines; peak %d of %d permits; %d violations",
		len(rec.log)/2, procs, goroutines, peak, n, len(bad))
	for _, s := range bad {
		t.Error(s)
	}
	if peak < 2 {
		t.Errorf("peak %d: the leases were not shared", peak)
	}
	if overNodes.Load() > 0 {
		t.Errorf("more than n+1 lease nodes seen %d times", overNodes.Load())
	}
	eventually(t, 5*time.Second, "no lease left", func() bool { return len(children(t, obs.Conn(), path+"/leases")) == 0 })
}

// kazoo#213: tries racing from many sessions never admit more than n.
func TestSemTryRace(t *testing.T) {
	const procs, n = 4, 2
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	ctx := ctxT(t, 30*time.Second)
	var rec recorder
	var wg sync.WaitGroup
	var wins atomic.Int32
	for p := range procs {
		s := connect(t, servers)
		sem := newSem(t, s, path, n)
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					h, ok, err := sem.TryAcquire(ctx, 1)
					if err != nil {
						t.Error(err)
						return
					}
					if !ok {
						continue
					}
					wins.Add(1)
					rec.add(record{kind: recS, who: fmt.Sprint(p, g), k: 1})
					time.Sleep(2 * time.Millisecond)
					rec.add(record{kind: recSx, who: fmt.Sprint(p, g), k: 1})
					if err := sem.Release(h); err != nil {
						t.Error(err)
					}
				}
			}()
		}
	}
	zktest.Wait(t, "the tries", &wg)
	bad, peak := checkSem(rec.log, n)
	t.Logf("%d tries won of %d; peak %d of %d", wins.Load(), procs*3*10, peak, n)
	for _, s := range bad {
		t.Error(s)
	}
	if wins.Load() == 0 {
		t.Error("no try ever won")
	}
	obs := connect(t, servers)
	eventually(t, 5*time.Second, "no lease left", func() bool { return len(children(t, obs.Conn(), path+"/leases")) == 0 })
}

// Local rules: k permits at once, FIFO, try, cancellation, release errors.
func TestSemLocalRules(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers)
	path := zktest.Path(t)
	sem := newSem(t, s, path, 3)
	ctx := ctxT(t, 20*time.Second)
	h2, err := sem.Acquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	kids := children(t, s.Conn(), path+"/leases")
	if len(kids) != 2 || !strings.Contains(kids[0], "-lease-") {
		t.Fatalf("2 permits: leases %v", kids)
	}
	if _, ok, err := sem.TryAcquire(ctx, 2); ok || err != nil {
		t.Fatalf("try 2 with 1 free: %v %v", ok, err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = sem.Acquire(short, 2)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait for 2 with 1 free: %v", err)
	}
	h1, ok, err := sem.TryAcquire(ctx, 1)
	if !ok || err != nil {
		t.Fatalf("try 1 with 1 free: %v %v", ok, err)
	}
	if sem.InUse() != 3 {
		t.Fatalf("InUse %d", sem.InUse())
	}
	if tok, err := sem.Token(h1); err != nil || tok <= 0 {
		t.Fatalf("token %d %v", tok, err)
	}
	for _, h := range []context.Context{h2, h1} {
		if err := sem.Release(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := sem.Release(h1); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("second release: %v", err)
	}
	if h1.Err() == nil {
		t.Fatal("released hold's context not cancelled")
	}
	eventually(t, 5*time.Second, "no lease left", func() bool { return len(children(t, s.Conn(), path+"/leases")) == 0 })
}

// Registries: a key's lock or semaphore lives while in use, and goes after.
func TestRWSemRegistries(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	root := zktest.Path(t)
	ctx := ctxT(t, 20*time.Second)
	rr, err := tier.NewRWRegistry(s, root+"/rw")
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	sr, err := tier.NewSemaphoreRegistry(s, root+"/sem", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	for i := range 50 {
		key := fmt.Sprintf("job-%d", i)
		r1, err := rr.RLock(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := rr.RLock(r1, key) // re-entry through the registry
		if err != nil {
			t.Fatal(err)
		}
		if err := rr.Release(r2); err != nil {
			t.Fatal(err)
		}
		if err := rr.Release(r1); err != nil {
			t.Fatal(err)
		}
		w, err := rr.Lock(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if tok, err := rr.Token(w); err != nil || tok <= 0 {
			t.Fatal(tok, err)
		}
		if err := rr.Release(w); err != nil {
			t.Fatal(err)
		}
		h, err := sr.Acquire(ctx, key, 2)
		if err != nil {
			t.Fatal(err)
		}
		if sr.Len() != 1 {
			t.Fatalf("sem registry Len %d while one key is held", sr.Len())
		}
		if err := sr.Release(h); err != nil {
			t.Fatal(err)
		}
	}
	if rr.Len() != 0 || sr.Len() != 0 {
		t.Fatalf("registries keep %d and %d keys after every release", rr.Len(), sr.Len())
	}
	if _, err := rr.RLock(ctx, "a/b"); !errors.Is(err, tier.ErrInvalidPath) {
		t.Fatalf("bad key: %v", err)
	}
}

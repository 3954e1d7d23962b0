package fence_test

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/fence"
	"github.com/tierlock/tierlock/internal/zktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFenceAdmits(t *testing.T) {
	var f fence.Fence
	steps := []struct {
		token int64
		want  error
	}{
		{5, nil},
		{5, nil}, // equal: the next local holder under hand-off
		{7, nil},
		{6, fence.ErrStaleToken},
		{5, fence.ErrStaleToken},
		{7, nil},
		{0, fence.ErrInvalidToken},
		{-3, fence.ErrInvalidToken},
		{8, nil},
	}
	for i, s := range steps {
		if err := f.Admit(s.token); !errors.Is(err, s.want) || (s.want == nil && err != nil) {
			t.Fatalf("step %d: Admit(%d) = %v, want %v", i, s.token, err, s.want)
		}
	}
	if f.High() != 8 {
		t.Fatalf("High %d, want 8", f.High())
	}
}

func TestFenceDo(t *testing.T) {
	var f fence.Fence
	ran := 0
	write := func() error { ran++; return nil }
	if err := f.Do(3, write); err != nil || ran != 1 {
		t.Fatal(err, ran)
	}
	if err := f.Do(2, write); !errors.Is(err, fence.ErrStaleToken) || ran != 1 {
		t.Fatalf("stale Do: %v, ran %d", err, ran)
	}
	boom := errors.New("boom")
	if err := f.Do(4, func() error { return boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if f.High() != 4 {
		t.Fatalf("a failed write's token not kept: High %d", f.High())
	}
}

func TestBadInput(t *testing.T) {
	var nf *fence.Fence
	var nk *fence.Keyed[string]
	var f fence.Fence
	var k fence.Keyed[string]
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"nil fence Admit", nf.Admit(1), fence.ErrNil},
		{"nil fence Do", nf.Do(1, func() error { return nil }), fence.ErrNil},
		{"nil keyed Admit", nk.Admit("a", 1), fence.ErrNil},
		{"nil keyed Do", nk.Do("a", 1, func() error { return nil }), fence.ErrNil},
		{"nil func", f.Do(1, nil), fence.ErrNilFunc},
		{"nil func keyed", k.Do("a", 1, nil), fence.ErrNilFunc},
		{"zero token keyed", k.Admit("a", 0), fence.ErrInvalidToken},
		{"negative token Do", f.Do(-1, func() error { return nil }), fence.ErrInvalidToken},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	if nf.High() != 0 || nk.High("a") != 0 || k.High("a") != 0 || f.High() != 0 {
		t.Error("bad input moved a fence")
	}
}

func TestKeyedIndependent(t *testing.T) {
	var k fence.Keyed[string]
	if err := k.Admit("a", 10); err != nil {
		t.Fatal(err)
	}
	if err := k.Admit("b", 3); err != nil {
		t.Fatalf("key b is fenced by key a: %v", err)
	}
	if err := k.Admit("a", 9); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatal(err)
	}
	if k.High("a") != 10 || k.High("b") != 3 || k.High("c") != 0 {
		t.Fatal(k.High("a"), k.High("b"), k.High("c"))
	}
}

// The storm: holders with random tokens write through Do concurrently.
// Whatever the interleaving, the writes that land are in token order
// (never a lower token after a higher one), the highest token always
// lands, and every refused token is below the final high.
func TestStorm(t *testing.T) {
	const workers, each = 16, 2000
	var (
		k       fence.Keyed[int]
		f       fence.Fence
		mu      sync.Mutex
		logMu   sync.Mutex
		log     [4][]int64 // by key: tokens written, in write order
		flog    []int64
		refused []int64
		max     int64
		wg      sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			var mine []int64
			for i := range each {
				// Holders come later and later, and overlap: each
				// worker's tokens drift up with jitter across workers.
				tok := 1 + int64(i)*10 + r.Int64N(60)
				key := r.IntN(4)
				// The writes yield before they land, as a real write
				// would; the logs have their own lock, so that only the
				// fence can order them.
				_ = k.Do(key, tok, func() error {
					runtime.Gosched()
					logMu.Lock()
					log[key] = append(log[key], tok)
					logMu.Unlock()
					return nil
				})
				err := f.Do(tok, func() error {
					runtime.Gosched()
					logMu.Lock()
					flog = append(flog, tok)
					logMu.Unlock()
					return nil
				})
				if errors.Is(err, fence.ErrStaleToken) {
					mine = append(mine, tok)
				} else if err != nil {
					t.Error(err)
				}
				// Admit races Do on the same fence.
				_ = f.Admit(tok)
			}
			mu.Lock()
			refused = append(refused, mine...)
			mu.Unlock()
		}()
	}
	zktest.Wait(t, "the workers", &wg)
	for key, toks := range log {
		if len(toks) == 0 {
			continue
		}
		for i := 1; i < len(toks); i++ {
			if toks[i] < toks[i-1] {
				t.Fatalf("key %d: token %d written after %d", key, toks[i], toks[i-1])
			}
		}
		if k.High(key) != toks[len(toks)-1] {
			t.Fatalf("key %d: High %d, last written %d", key, k.High(key), toks[len(toks)-1])
		}
	}
	for i := 1; i < len(flog); i++ {
		if flog[i] < flog[i-1] {
			t.Fatalf("token %d written after %d", flog[i], flog[i-1])
		}
	}
	for _, tok := range flog {
		max = maxOf(max, tok)
	}
	if f.High() < max {
		t.Fatalf("High %d below a written token %d", f.High(), max)
	}
	for _, tok := range refused {
		if tok >= f.High() {
			t.Fatalf("token %d refused though the final high is %d", tok, f.High())
		}
	}
	t.Logf("%d writes landed in order, %d refused as stale", len(flog), len(refused))
}

func maxOf(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

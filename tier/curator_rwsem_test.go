package tier_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/peers"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// mixedRun runs Curator's CuratorPeer in mode (rwloop or semloop, with
// param) for d on path, while sessions of this process run body on the
// same path until the same end, all appending records to one O_APPEND
// file; it returns the records and the Curator holds.
func mixedRun(t *testing.T, mode, param string, d, hold time.Duration,
	body func(ctx context.Context, s *zklock.Session, who string, emit func(string)) int) []record {
	t.Helper()
	if err := peers.Check(peers.Curator); err != nil {
		t.Skip(err)
	}
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	file := t.TempDir() + "/records"
	ctx := ctxT(t, 2*time.Minute)
	// Compile first (javac takes the machine's cores for seconds), then
	// start: the JVM takes a second or two, and the window opens after it.
	cache := t.TempDir()
	if _, err := peers.Command(ctx, peers.Curator, cache); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(2*time.Second + d)
	cmd, err := peers.Command(ctx, peers.Curator, cache, mode, strings.Join(servers, ","), path, "4",
		strconv.FormatInt(end.UnixMilli(), 10), strconv.FormatInt(hold.Microseconds(), 10), file, "curator", param)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ours := 0
	for p := range 2 {
		s := connect(t, servers)
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wctx, cancel := context.WithDeadline(ctx, end)
				defer cancel()
				who := fmt.Sprintf("tierlock %d %d", p, g)
				n := body(wctx, s, path+"|"+who, func(line string) {
					if _, err := f.WriteString(line + "\n"); err != nil { // one write(2) each
						t.Error(err)
					}
				})
				mu.Lock()
				ours += n
				mu.Unlock()
			}()
		}
	}
	zktest.Wait(t, "our goroutines", &wg)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("curator: %v\n%s", err, errOut.String())
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := parseRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("curator: %s; tierlock holds %d", strings.TrimSpace(out.String()), ours)
	if !strings.HasPrefix(out.String(), "holds ") || strings.TrimSpace(out.String()) == "holds 0" || ours == 0 {
		t.Fatalf("one side held nothing: curator %q, tierlock %d", out.String(), ours)
	}
	return recs
}

// Curator's InterProcessReadWriteLock (4 threads, 80% reads) and tierlock
// RWLocks (2 sessions x 3 goroutines, 80% reads) on one path: no writer
// overlaps anyone, readers share.
func TestRWCurator(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Curator's peer, about 6 s")
	}
	recs := mixedRun(t, "rwloop", "800", 3*time.Second, 500*time.Microsecond, func(ctx context.Context, s *zklock.Session, id string, emit func(string)) int {
		path, who, _ := strings.Cut(id, "|")
		rw := newRW(t, s, path)
		n := 0
		for i := 0; ctx.Err() == nil; i++ {
			if i%5 != 0 {
				h, err := rw.RLock(ctx)
				if err != nil {
					break
				}
				emit("R " + who)
				time.Sleep(500 * time.Microsecond)
				emit("r " + who)
				_ = rw.Release(h)
			} else {
				h, err := rw.Lock(ctx)
				if err != nil {
					break
				}
				tok, _ := rw.Token(h)
				emit(fmt.Sprintf("W %s %d", who, tok))
				time.Sleep(500 * time.Microsecond)
				emit("w " + who)
				_ = rw.Release(h)
			}
			n++
		}
		return n
	})
	v := checkRW(recs)
	t.Logf("mixed with Curator: %d reads, %d writes, reader concurrency %d, %d violations", v.reads, v.writes, v.maxReaders, len(v.violations))
	for i, s := range v.violations {
		if i < 10 {
			t.Error(s)
		}
	}
	if v.maxReaders < 2 {
		t.Errorf("readers never shared")
	}
}

// Curator's InterProcessSemaphoreV2 (4 threads) and tierlock Semaphores
// (2 sessions x 3 goroutines) share 3 leases: never more than 3 in use.
func TestSemCurator(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Curator's peer, about 7 s")
	}
	const n = 3
	const semHold = 20 * time.Millisecond
	recs := mixedRun(t, "semloop", strconv.Itoa(n), 3*time.Second, semHold, func(ctx context.Context, s *zklock.Session, id string, emit func(string)) int {
		path, who, _ := strings.Cut(id, "|")
		sem := newSem(t, s, path, n)
		c := 0
		for ctx.Err() == nil {
			h, err := sem.Acquire(ctx, 1)
			if err != nil {
				break
			}
			emit("S " + who)
			time.Sleep(semHold)
			emit("s " + who)
			_ = sem.Release(h)
			c++
		}
		return c
	})
	bad, peak := checkSem(recs, n)
	t.Logf("mixed with Curator: %d holds, peak %d of %d, %d violations", len(recs)/2, peak, n, len(bad))
	for i, s := range bad {
		if i < 10 {
			t.Error(s)
		}
	}
	if peak < n && len(recs) >= 80 { // a server stalled by a busy disk may allow few holds

		t.Errorf("peak %d: the %d leases were never all in use", peak, n)
	}
}

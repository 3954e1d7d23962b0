package zkcompat_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
)

// The drop-in's cost beside zk.Lock's, counted on the wire (wiretap_test.go),
// in the two shapes issue 43 measured: a local hand-off (two handles of one
// process taking turns on one path) and sixteen paths (sixteen handles of
// one process, each going round the paths). Times are the benchmark's
// (BenchmarkVsZkLock); the tests count requests and refusals only.

// shape is a workload: goroutines handles, each taking perG holds, the
// i-th of goroutine g on paths[(g+i) % len(paths)].
type shape struct {
	name       string
	goroutines int
	paths      int
	perG       int
}

var (
	single    = shape{name: "single", goroutines: 1, paths: 1, perG: 20}
	handoff   = shape{name: "handoff", goroutines: 2, paths: 1, perG: 20}
	paths16   = shape{name: "paths16", goroutines: 16, paths: 16, perG: 16}
	costShape = []shape{single, handoff, paths16}
)

// holds is how many holds one run of the shape takes.
func (sh shape) holds() int { return sh.goroutines * sh.perG }

// run takes the shape's holds with locks made by newLock on c, each
// goroutine with its own handle per path, as code written for zk.Lock
// does; it returns the first error.
func (sh shape) run(c *zk.Conn, paths []string, newLock func(c *zk.Conn, p string) locker) error {
	var wg sync.WaitGroup
	errs := make(chan error, sh.goroutines)
	for g := range sh.goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			locks := make([]locker, len(paths))
			for i := range sh.perG {
				p := (g + i) % len(paths)
				if locks[p] == nil {
					locks[p] = newLock(c, paths[p])
				}
				if err := locks[p].Lock(); err != nil {
					errs <- err
					return
				}
				if err := locks[p].Unlock(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	select {
	case <-zktest.Waited(&wg):
	case <-time.After(zktest.StuckAfter):
		return fmt.Errorf("the shape's goroutines still running after %v; the goroutines:\n%s", zktest.StuckAfter, zktest.Goroutines())
	}
	close(errs)
	return errors.Join(<-errs)
}

// shapePaths returns n lock paths of the test's, made persistent on c:
// the drop-in's would be container nodes, which the server removes once
// empty (the test server looks every second), and the next create below
// one would meet a missing parent, which is not what these runs count.
func shapePaths(tb testing.TB, c *zk.Conn, n int) []string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = zktest.Path(tb)
		createParents(tb, c, ps[i]+"/x")
	}
	return ps
}

// Issue 43, item 5: every release of the drop-in queued a delete of a
// node that Unlock had deleted already; that delete found the node gone,
// and in a multi its zk.ErrNoNode refused the whole batch, the writes
// beside it going again apart. In a clean run no delete may find its node
// gone and the server may refuse no multi, in either shape, as the server
// answers them on the caller's connection.
func TestNoRefusedMulti(t *testing.T) {
	for _, sh := range costShape {
		t.Run(sh.name, func(t *testing.T) {
			c, tap := tapped(t)
			paths := shapePaths(t, c, sh.paths)
			before := tap.counts()
			for range 3 {
				if err := sh.run(c, paths, impls[1].newLock); err != nil {
					t.Fatal(err)
				}
			}
			got := tap.counts().minus(before)
			t.Logf("%s, %d holds: %d requests (%d multis, %d deletes), %d multis refused (%d at a create, %d at a delete), %d deletes found the node gone",
				sh.name, 3*sh.holds(), got.reqs, got.multis, got.deletes, got.refused, got.refusedAtCreate, got.refusedAtDelete, got.noNode)
			if got.refused != 0 || got.noNode != 0 {
				t.Errorf("a clean run: %d multis refused and %d deletes found their node gone; want 0 and 0", got.refused, got.noNode)
			}
		})
	}
}

// Issue 43, done-when: a local hand-off costs the drop-in no more
// requests than zk.Lock, side by side on one connection each, alternated.
// The 16-path shape is counted and logged too; its time is the
// benchmark's.
func TestRequestsBesideZkLock(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: alternated rounds beside zk.Lock, about 3 s")
	}
	for _, sh := range costShape {
		t.Run(sh.name, func(t *testing.T) {
			var reqs [2]int64
			for round := range 4 {
				for k := range impls {
					im := impls[(k+round)%2] // alternated: each goes first twice
					c, tap := tapped(t)
					paths := shapePaths(t, c, sh.paths)
					before := tap.counts()
					if err := sh.run(c, paths, im.newLock); err != nil {
						t.Fatal(err)
					}
					reqs[(k+round)%2] += tap.counts().minus(before).reqs
				}
			}
			per := func(i int) float64 { return float64(reqs[i]) / float64(4*sh.holds()) }
			t.Logf("%s: requests per hold: zk.Lock %.2f, zkcompat %.2f", sh.name, per(0), per(1))
			if sh == handoff && per(1) > per(0) {
				t.Errorf("a local hand-off: the drop-in sends %.2f requests per hold, zk.Lock %.2f", per(1), per(0))
			}
		})
	}
}

package worker

import (
	"context"
	"sync"
	"time"

	"github.com/tierlock/tierlock/stress/internal/proto"
)

// Pace and cost of the test doubles proto.FakeDrain and proto.FakeAbandon.
const (
	fakeService      = 10 * time.Millisecond   // grants of a path are this far apart, each after one Exists
	fakeAbandonDelay = 1500 * time.Millisecond // giving a wait up takes this long...
	fakeAbandonReqs  = 10                      // ... and this many requests
)

// fakeImpl is a lock that only the goroutines of one process share (a
// channel per path), paced like a ZooKeeper lock: each grant sends one real
// request, and grants of a path are fakeService apart. Its holders never overlap, so the checker
// passes it; it exists to test how runs are counted.
type fakeImpl struct {
	*gozkImpl
	abandon bool
	sems    []chan struct{}
	mu      sync.Mutex
	tokens  []int64
	last    []time.Time // by path: when the latest grant was due
}

func newFakeImpl(ctx context.Context, task proto.Task) (*fakeImpl, error) {
	g, err := newGozkImpl(ctx, task)
	if err != nil {
		return nil, err
	}
	im := &fakeImpl{gozkImpl: g, abandon: task.Impl == proto.FakeAbandon,
		sems: make([]chan struct{}, len(task.Paths)), tokens: make([]int64, len(task.Paths)),
		last: make([]time.Time, len(task.Paths))}
	for i := range im.sems {
		im.sems[i] = make(chan struct{}, 1)
	}
	return im, nil
}

func (im *fakeImpl) tokenKind() string                        { return "seq" }
func (im *fakeImpl) holder(int) holder                        { return im }
func (im *fakeImpl) lost(int) (<-chan struct{}, func() error) { return nil, nil }
func (im *fakeImpl) release(p int) error                      { <-im.sems[p]; return nil }

func (im *fakeImpl) acquire(ctx context.Context, p int) (int64, error) {
	done := ctx.Done()
	if !im.abandon {
		done = nil // as zk.Lock's: the wait cannot be abandoned
	}
	select {
	case im.sems[p] <- struct{}{}:
	case <-done:
		return 0, im.giveUp(ctx, p)
	}
	if _, _, err := im.conn.Exists(im.paths[p]); err != nil {
		<-im.sems[p]
		return 0, err
	}
	t := time.NewTimer(time.Until(im.slot(p)))
	defer t.Stop()
	select {
	case <-t.C:
		return im.token(p), nil
	case <-done:
		<-im.sems[p]
		return 0, im.giveUp(ctx, p)
	}
}

// slot is when the next grant of path p is due: fakeService after the
// previous one, so that the pace does not depend on the machine's load
// (late grants are made up for, up to ten slots).
func (im *fakeImpl) slot(p int) time.Time {
	im.mu.Lock()
	defer im.mu.Unlock()
	next := im.last[p].Add(fakeService)
	if now := time.Now(); now.Sub(next) > 10*fakeService {
		next = now
	}
	im.last[p] = next
	return next
}

// giveUp is what abandoning a wait costs: time and requests (a real lock
// deletes its queued node).
func (im *fakeImpl) giveUp(ctx context.Context, p int) error {
	for range fakeAbandonReqs {
		_, _, _ = im.conn.Exists(im.paths[p])
	}
	time.Sleep(fakeAbandonDelay)
	return ctx.Err()
}

func (im *fakeImpl) token(p int) int64 {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.tokens[p]++
	return im.tokens[p]
}

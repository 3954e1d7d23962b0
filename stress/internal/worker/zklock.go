package worker

import (
	"context"
	"fmt"
	"sync"

	"github.com/tierlock/tierlock/zklock"
)

// zklockImpl shares one zklock.Lock per path among the goroutines of the
// process through a sync.Mutex: the straightforward way to put a
// process-level lock in front of many goroutines, with no cancellation of
// the local wait and no hand-off.
type zklockImpl struct {
	s     *zklock.Session
	locks []*zklock.Lock
	mus   []sync.Mutex
	holds []*zklock.Hold // by path, written and read under its mutex
}

func newZklockImpl(s *zklock.Session, paths []string, proc int) (*zklockImpl, error) {
	im := &zklockImpl{s: s, mus: make([]sync.Mutex, len(paths)), holds: make([]*zklock.Hold, len(paths))}
	for _, p := range paths {
		l, err := zklock.New(s, p, zklock.WithLabel(fmt.Sprintf("stress worker %d", proc)))
		if err != nil {
			return nil, err
		}
		im.locks = append(im.locks, l)
	}
	return im, nil
}

func (im *zklockImpl) holder(int) holder        { return im }
func (im *zklockImpl) session() *zklock.Session { return im.s }
func (im *zklockImpl) tokenKind() string        { return "zxid" }
func (im *zklockImpl) acquire(ctx context.Context, p int) (int64, error) {
	im.mus[p].Lock()
	if err := ctx.Err(); err != nil {
		// The run ended while this goroutine waited for the mutex. (zklock
		// would create and delete a node for an Acquire on an ended ctx.)
		im.mus[p].Unlock()
		return 0, err
	}
	h, err := im.locks[p].Acquire(ctx)
	if err != nil {
		im.mus[p].Unlock()
		return 0, err
	}
	im.holds[p] = h
	return h.Token(), nil
}

func (im *zklockImpl) lost(p int) (<-chan struct{}, func() error) {
	return im.holds[p].Lost(), im.holds[p].Err
}

func (im *zklockImpl) release(p int) error {
	defer im.mus[p].Unlock()
	h := im.holds[p]
	im.holds[p] = nil
	return h.Release()
}

func (im *zklockImpl) close() error {
	for _, l := range im.locks {
		l.Close()
	}
	return im.s.Close()
}

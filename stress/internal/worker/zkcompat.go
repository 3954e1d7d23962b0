package worker

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/zkcompat"
)

// zkcompatImpl is the drop-in as code written for zk.Lock uses it: one
// handle per goroutine and path on one connection; underneath, one node
// per path for the process.
type zkcompatImpl struct{ *gozkImpl }

func newZkcompatImpl(ctx context.Context, task proto.Task) (*zkcompatImpl, error) {
	im, err := newGozkImpl(ctx, task)
	if err != nil {
		return nil, err
	}
	return &zkcompatImpl{im}, nil
}

func (im *zkcompatImpl) tokenKind() string { return "zxid" }

func (im *zkcompatImpl) holder(int) holder {
	return &zkcompatHolder{im: im.gozkImpl, locks: make([]*zkcompat.Lock, len(im.paths))}
}

func (im *zkcompatImpl) close() error {
	zkcompat.CloseConn(im.conn)
	return im.gozkImpl.close()
}

type zkcompatHolder struct {
	im    *gozkImpl
	locks []*zkcompat.Lock
}

func (h *zkcompatHolder) acquire(ctx context.Context, p int) (int64, error) {
	if h.locks[p] == nil {
		h.locks[p] = zkcompat.NewLock(h.im.conn, h.im.paths[p], zk.WorldACL(zk.PermAll))
	}
	if err := h.locks[p].LockContext(ctx); err != nil {
		return 0, err
	}
	return h.locks[p].Token(), nil
}

func (h *zkcompatHolder) release(p int) error { return h.locks[p].Unlock() }

func (h *zkcompatHolder) lost(p int) (<-chan struct{}, func() error) { return h.locks[p].Lost(), nil }

package worker

import (
	"context"
	"path/filepath"

	"github.com/tierlock/tierlock/internal/peers"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// peerImpl drives a Curator or kazoo process (the -mix peers curator and
// kazoo): its threads are the worker's goroutines, each with its own lock
// per path.
type peerImpl struct{ p *peers.Proc }

func newPeerImpl(ctx context.Context, task proto.Task) (*peerImpl, error) {
	// The parent prepared the peer next to the record files.
	p, err := peers.Serve(ctx, peers.Kind(task.Impl), filepath.Dir(task.RecordFile), task.Servers,
		task.SessionTimeout, task.Goroutines, task.Paths)
	if err != nil {
		return nil, err
	}
	return &peerImpl{p}, nil
}

func (im *peerImpl) holder(g int) holder { return peerHolder{im.p, g} }
func (im *peerImpl) tokenKind() string   { return "" }
func (im *peerImpl) close() error        { return im.p.Close() }

type peerHolder struct {
	p *peers.Proc
	g int
}

// acquire: the peer's sequence number is not a token comparable with the
// other implementations', so none is reported.
func (h peerHolder) acquire(ctx context.Context, p int) (int64, error) {
	_, err := h.p.Acquire(ctx, h.g, p)
	return 0, err
}
func (h peerHolder) release(p int) error                      { return h.p.Release(h.g, p) }
func (h peerHolder) lost(int) (<-chan struct{}, func() error) { return nil, nil }

package worker

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/tierlock/tierlock/internal/peers"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/record"
	"github.com/tierlock/tierlock/zklock"
)

// newRecipeImpl makes the implementation of a read/write lock or semaphore
// run (task.Recipe rw or semaphore): tier's RWLock or Semaphore, Curator's
// InterProcessReadWriteLock or InterProcessSemaphoreV2 through the Java
// peer, or nolock.
func newRecipeImpl(ctx context.Context, task proto.Task, log *slog.Logger, events *sessionEvents) (impl, error) {
	switch task.Impl {
	case proto.Tier:
		s, err := zklock.Connect(ctx, task.Servers, sessionOptions(task, log, events.listen)...)
		if err != nil {
			return nil, err
		}
		var im impl
		if task.Recipe == proto.RW {
			im, err = newTierRWImpl(s, task, log)
		} else {
			im, err = newTierSemImpl(s, task, log)
		}
		if err != nil {
			s.Close()
			return nil, err
		}
		return im, nil
	case proto.Curator:
		flag := peers.CuratorRW
		if task.Recipe == proto.Semaphore {
			flag = peers.CuratorLeases(task.Leases)
		}
		// The parent prepared the peer next to the record files.
		p, err := peers.Serve(ctx, peers.Curator, filepath.Dir(task.RecordFile), task.Servers,
			task.SessionTimeout, task.Goroutines, task.Paths, flag)
		if err != nil {
			return nil, err
		}
		return &peerImpl{p}, nil
	case proto.Nolock:
		return nolockImpl{}, nil
	}
	return nil, fmt.Errorf("implementation %q has no %s recipe", task.Impl, task.Recipe)
}

// acquireKind: a read or write lock of Curator's InterProcessReadWriteLock
// (the peer's --rw), or k leases of its InterProcessSemaphoreV2 (the
// peer's --leases). No token is reported.
func (h peerHolder) acquireKind(ctx context.Context, p int, k record.Kind) (int64, error) {
	var err error
	switch {
	case k.Permits > 0:
		_, err = h.p.AcquirePermits(ctx, h.g, p, int(k.Permits))
	case k.Shared:
		_, err = h.p.AcquireRead(ctx, h.g, p)
	default:
		_, err = h.p.AcquireWrite(ctx, h.g, p)
	}
	return 0, err
}

// acquireKind: no lock of any kind.
func (nolockImpl) acquireKind(context.Context, int, record.Kind) (int64, error) { return 0, nil }

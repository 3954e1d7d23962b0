package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Curator's InterProcessReadWriteLock names its nodes _c_<guid>-__READ__<seq>
// and _c_<guid>-__WRIT__<seq>; we create the same, so that Curator's read/write
// processes and ours share a path.
const (
	readMarker  = "-__READ__"
	writeMarker = "-__WRIT__"
)

// RWLock is a process-level read/write lock on one ZooKeeper path, on the
// same queue core as Lock: two Locks, one creating read nodes and one
// creating write nodes, each with its own queue rule over the path's
// children of every family.
//
//   - A writer goes when its node is the lowest contender of any family
//     (the mutex's rule: it watches its immediate predecessor).
//   - A reader goes when no writer node precedes its own: a write node of
//     Curator's read/write lock, a kazoo Lock/WriteLock node, or a mutex
//     node of tierlock, Curator or zk.Lock (a mutex excludes readers too).
//     Writers issued after it do not count (kazoo#649 counted them). It
//     watches the nearest writer before it, the only node whose deletion
//     can let it go next. Readers of other families (Curator's __READ__,
//     kazoo's __rlock__) share with it.
//   - A holder of the write lock may take the read lock: the read rule
//     ignores this RWLock's own held write node. It ignores nothing else,
//     so a read node that a foreign writer precedes does not go even
//     while we hold the write lock; that is what keeps a downgrade from
//     letting that writer in while we still read (CURATOR-621). Such a
//     writer waits for our write lock, so the read lock's Acquire does not
//     wait for it: while the write lock is held, Acquire on the read lock
//     is a try, and fails with ErrDowngradeBlocked, leaving no node, when
//     the read node cannot go at once. Package tier downgrades with
//     TryAcquire on the read lock, and keeps the write node while the try
//     fails.
//   - The write lock refuses to queue while the read lock has a hold
//     (ErrUpgrade): the write node would wait behind our own read node.
//
// Each Lock serves one holder at a time (see Lock); tier.RWLock puts a
// local read/write gate in front, so that all local readers share one read
// node.
type RWLock struct {
	read, write *Lock

	// WriterWaiting's children watch, kept while its answer is no: behind
	// fires when the queue changes, and the answer holds for behindNode
	// until then.
	mu         sync.Mutex
	behind     <-chan zk.Event
	behindNode string
}

// NewRWLock returns a read/write lock on path. The options apply to both
// Locks.
func NewRWLock(s *Session, path string, opts ...Option) (*RWLock, error) {
	rw := &RWLock{}
	var err error
	if rw.write, err = newRecipeLock(s, path, writeMarker, mutexRule, nil, opts...); err != nil {
		return nil, err
	}
	if rw.read, err = newRecipeLock(s, path, readMarker, rw.readRule, nil, opts...); err != nil {
		return nil, err
	}
	rw.read.noWait = func() bool { return rw.write.currentNode() != "" }
	rw.write.mayQueue = func() error {
		if rw.read.currentNode() != "" {
			return ErrUpgrade
		}
		return nil
	}
	return rw, nil
}

// ReadLock returns the lock whose holds are shared with other readers.
func (rw *RWLock) ReadLock() *Lock {
	if rw == nil {
		return nil
	}
	return rw.read
}

// WriteLock returns the lock whose holds exclude everyone else.
func (rw *RWLock) WriteLock() *Lock {
	if rw == nil {
		return nil
	}
	return rw.write
}

// Path returns the lock path.
func (rw *RWLock) Path() string {
	if rw == nil {
		return ""
	}
	return rw.write.Path()
}

// Close closes both locks, releasing their holds and ending their
// acquisitions in progress.
func (rw *RWLock) Close() error {
	if rw == nil {
		return errNil("RWLock")
	}
	return errors.Join(rw.read.Close(), rw.write.Close())
}

// WriterWaiting reports whether a writer of any family (our own write
// node aside) is queued behind the read lock's held node. A caller that
// shares the node among several local readers (package tier) stops letting
// new ones in once one is, so that a stream of overlapping local readers
// cannot starve that writer. It keeps a children watch on the path while
// the answer is no, so asking again costs no request until the queue
// changes; otherwise one children listing. Without a read hold it returns
// ErrNotHeld.
func (rw *RWLock) WriterWaiting(ctx context.Context) (bool, error) {
	if rw == nil {
		return false, errNil("RWLock")
	}
	if ctx == nil {
		return false, ErrNilContext
	}
	node := rw.read.currentNode()
	if node == "" {
		return false, ErrNotHeld
	}
	rw.mu.Lock()
	if rw.behindNode == node && rw.behind != nil {
		select {
		case <-rw.behind:
			rw.behind = nil // the queue changed: look again
		default:
			rw.mu.Unlock()
			return false, nil
		}
	}
	rw.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return false, err
	}
	f := rw.read.f
	children, _, ev, err := f.Conn().ChildrenW(rw.read.path)
	if err != nil {
		return false, fmt.Errorf("zklock: list %s: %w", rw.read.path, err)
	}
	q := sortQueue(children)
	i := position(q, path.Base(node), "")
	if i < 0 {
		return false, nil // our node is gone: the hold's loss is told elsewhere
	}
	own := ""
	if n := rw.write.currentNode(); n != "" {
		own = path.Base(n)
	}
	for _, e := range q[i+1:] {
		if e.name != own && isWriter(e.name) {
			return true, nil
		}
	}
	rw.mu.Lock()
	rw.behind, rw.behindNode = ev, node
	rw.mu.Unlock()
	return false, nil
}

// readRule: our read node goes when no writer node precedes it, our own
// held write node excepted; otherwise it watches the nearest such writer.
func (rw *RWLock) readRule(q []entry, i int) (goes bool, watch int) {
	own := ""
	if n := rw.write.currentNode(); n != "" {
		own = path.Base(n)
	}
	return readRule(q, i, own)
}

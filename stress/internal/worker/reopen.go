package worker

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/tier"
)

// The close fault: a lock's Close racing the grants of its goroutines'
// acquisitions: a grant published after Close looked for holds must be
// withdrawn, not left live with no node (TestRecipeFaultClose).

// reopener is an implementation whose locks can be closed and made anew
// while its goroutines acquire them.
type reopener interface{ reopen() error }

var errNoReopen = errors.New("this implementation's locks cannot be closed and made anew during a run")

// closeLocks carries out proto.CloseLocks: CloseRounds reopens, about
// CloseEvery apart, then a Reopened message with the rounds made.
func (w *worker) closeLocks() {
	r, ok := w.im.(reopener)
	if !ok {
		w.out.send(proto.Message{Type: proto.Reopened, Err: errNoReopen.Error()})
		return
	}
	n := int64(0)
	for range proto.CloseRounds {
		time.Sleep(time.Duration(rand.Int64N(int64(2 * proto.CloseEvery))))
		if err := r.reopen(); err != nil {
			w.out.send(proto.Message{Type: proto.Reopened, N: n, Err: err.Error()})
			return
		}
		n++
	}
	w.out.send(proto.Message{Type: proto.Reopened, N: n})
}

// lockSet is an implementation's locks, one per path, which the close
// fault replaces while goroutines use them: reopen publishes the new set
// before it closes the old, so an acquisition that meets ErrClosed on an
// old lock finds the new one (retry). One mechanism for tier's Lock,
// RWLock and Semaphore.
type lockSet[T interface {
	comparable
	Close() error
}] struct {
	mk    func() ([]T, error) // makes a set, closing what it made on error
	cur   atomic.Pointer[[]T]
	mu    sync.Mutex // serializes reopen and close
	ended bool       // close was called: no reopen, no retry
}

// newLockSet makes the first set with mk.
func newLockSet[T interface {
	comparable
	Close() error
}](mk func() ([]T, error)) (*lockSet[T], error) {
	ls := &lockSet[T]{mk: mk}
	locks, err := mk()
	if err != nil {
		return nil, err
	}
	ls.cur.Store(&locks)
	return ls, nil
}

// get returns path p's current lock.
func (ls *lockSet[T]) get(p int) T { return (*ls.cur.Load())[p] }

func (ls *lockSet[T]) len() int { return len(*ls.cur.Load()) }

func (ls *lockSet[T]) reopen() error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.ended {
		return nil
	}
	locks, err := ls.mk()
	if err != nil {
		return err
	}
	old := ls.cur.Swap(&locks)
	closeEach(*old)
	return nil
}

// retry reports whether a call that failed with err on lock l should be
// made again on the current set: l was closed by reopen, not by close.
func (ls *lockSet[T]) retry(l T, err error) bool {
	if !errors.Is(err, tier.ErrClosed) {
		return false
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return !ls.ended && !slices.Contains(*ls.cur.Load(), l)
}

func (ls *lockSet[T]) close() {
	ls.mu.Lock()
	ls.ended = true
	ls.mu.Unlock()
	closeEach(*ls.cur.Load())
}

func closeEach[T interface{ Close() error }](locks []T) {
	for _, l := range locks {
		_ = l.Close()
	}
}

// makeEach makes one lock per path with mk, closing those it made if one
// fails.
func makeEach[T interface{ Close() error }](paths []string, mk func(path string) (T, error)) ([]T, error) {
	var locks []T
	for _, p := range paths {
		l, err := mk(p)
		if err != nil {
			closeEach(locks)
			return nil, err
		}
		locks = append(locks, l)
	}
	return locks, nil
}

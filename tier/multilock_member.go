package tier

import "context"

// Member is one lock of a MultiLock: a *Lock, or the Reader() or Writer()
// of a *RWLock. Its methods other than Path are this package's own, so a
// Member comes only from those.
type Member interface {
	// Path returns the lock path, which orders the members.
	Path() string

	memberKind() string
	memberCheck() error
	memberAcquire(ctx context.Context, wait bool) (context.Context, bool, error)
	// memberHold returns, for a held context memberAcquire returned, the
	// key and value under which it carries the hold, and the hold's own
	// context, cancelled when the hold ends (a re-entry returns the
	// caller's context, which is not that).
	memberHold(held context.Context) (key, val any, hctx context.Context)
	memberRelease(held context.Context) error
	memberToken(held context.Context) (int64, error)
}

var (
	_ Member = (*Lock)(nil)
	_ Member = rwSide{}
)

func (l *Lock) memberKind() string { return "mutex" }

func (l *Lock) memberCheck() error {
	if l == nil {
		return errNil("Lock")
	}
	return nil
}

func (l *Lock) memberAcquire(ctx context.Context, wait bool) (context.Context, bool, error) {
	return l.acquire(ctx, wait)
}

func (l *Lock) memberHold(held context.Context) (key, val any, hctx context.Context) {
	h := held.Value(holdKey{l}).(*hold)
	return holdKey{l}, h, h.ctx
}

func (l *Lock) memberRelease(held context.Context) error { return l.Release(held) }

func (l *Lock) memberToken(held context.Context) (int64, error) { return l.Token(held) }

// rwSide is one side of an RWLock as a multi-lock member.
type rwSide struct {
	rw    *RWLock
	write bool
}

// Reader returns the read side of rw as a MultiLock member: the multi-lock
// takes a read hold with Acquire and gives it back with Release.
func (rw *RWLock) Reader() Member { return rwSide{rw: rw} }

// Writer returns the write side of rw as a MultiLock member: the
// multi-lock takes a write hold with Acquire and gives it back with
// Release.
func (rw *RWLock) Writer() Member { return rwSide{rw: rw, write: true} }

// Path returns the lock path.
func (s rwSide) Path() string { return s.rw.Path() }

func (s rwSide) memberKind() string {
	if s.write {
		return "write"
	}
	return "read"
}

func (s rwSide) memberCheck() error {
	if s.rw == nil {
		return errNil("Lock")
	}
	return nil
}

func (s rwSide) memberAcquire(ctx context.Context, wait bool) (context.Context, bool, error) {
	if s.write {
		return s.rw.lock(ctx, wait)
	}
	return s.rw.rlock(ctx, wait)
}

func (s rwSide) memberHold(held context.Context) (key, val any, hctx context.Context) {
	k := rwKey{s.rw, s.write}
	h := held.Value(k).(*rwHold)
	// h.ctx is set before the hold is published and never changes.
	return k, h, h.ctx
}

func (s rwSide) memberRelease(held context.Context) error { return s.rw.release(held, s.write) }

func (s rwSide) memberToken(held context.Context) (int64, error) {
	if err := s.rw.check(held); err != nil {
		return 0, err
	}
	s.rw.mu.Lock()
	defer s.rw.mu.Unlock()
	if h := s.rw.holdOfLocked(held, s.write); h != nil {
		s.rw.lossMu.Lock()
		defer s.rw.lossMu.Unlock()
		return h.token, nil
	}
	if s.rw.life.isClosed() {
		return 0, ErrClosed
	}
	return 0, ErrNotHolder
}

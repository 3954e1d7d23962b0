package exclusion

import "sync"

// Log records the holds of goroutines of one process as they happen. Its
// methods may be called from any goroutine; the zero Log is ready to use.
//
// Every enter and exit is stamped on [Now] under the log's mutex, and a
// stamp is never below the one before, nor equal to it, so the stamps give
// the exact order of the calls: an enter logged before another holder's
// exit overlaps it, however close the two calls were.
type Log struct {
	mu    sync.Mutex
	last  int64
	holds []Hold
}

// Entry is a hold in a Log, as returned by [Log.Enter].
type Entry struct {
	l *Log
	i int
}

// stamp returns the next time stamp; l.mu is held.
func (l *Log) stamp() int64 {
	l.last = max(Now(), l.last+1)
	return l.last
}

// Enter records that goroutine g of process proc entered its critical
// section on lock path with the fencing token (0: unknown). Call it after
// the lock said it holds, and [Entry.Exit] before releasing it.
func (l *Log) Enter(proc, g, path int32, token int64) Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holds = append(l.holds, Hold{Proc: proc, G: g, Path: path, Token: token, Enter: l.stamp()})
	return Entry{l, len(l.holds) - 1}
}

// Exit records that the holder left its critical section and returns the
// stamp of the exit.
func (e Entry) Exit() int64 {
	e.l.mu.Lock()
	defer e.l.mu.Unlock()
	t := e.l.stamp()
	e.l.holds[e.i].Exit = t
	return t
}

// Lost records when, on [Now], the holder saw its hold lost.
func (e Entry) Lost(at int64) {
	e.l.mu.Lock()
	defer e.l.mu.Unlock()
	e.l.holds[e.i].Loss = at
}

// Hold returns the hold as recorded so far.
func (e Entry) Hold() Hold {
	e.l.mu.Lock()
	defer e.l.mu.Unlock()
	return e.l.holds[e.i]
}

// Holds returns a copy of the holds recorded so far, in the order they
// were entered.
func (l *Log) Holds() []Hold {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Hold(nil), l.holds...)
}

// First returns the first hold, in the order of entering, that match
// accepts.
func (l *Log) First(match func(Hold) bool) (Hold, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, h := range l.holds {
		if match(h) {
			return h, true
		}
	}
	return Hold{}, false
}

// Check checks the holds recorded so far (see [Check]). Holds still open
// count as lost: call it once the holders stopped.
func (l *Log) Check(opt Options) Result { return Check(l.Holds(), opt) }

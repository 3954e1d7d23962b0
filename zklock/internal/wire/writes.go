package wire

import (
	"slices"
	"time"

	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/internal/mutant"
)

// What the tap sees of each request go-zookeeper writes (see Tap): a
// pipelined request's waiter, taken as its write begins and told once its
// bytes are out (Expect, Forget; take, wrote); each write's start, in the
// ring that dates proofs (Mark, FirstWriteAfter; began); and the requests
// written, counted by opcode, with the test seam that runs before each
// write (Written, SetOnWrite; count).

// Written reports how many requests with opcode op were written (a test
// seam, and a count for the curious). A request is counted as it is handed
// to the socket, before its reply can be read: once its caller has the
// reply, it is in the count (a failed write is counted too).
func (t *Tap) Written(op int32) int64 {
	if op < 0 || int(op) >= len(t.written) {
		return 0
	}
	return t.written[op].Load()
}

// SetOnWrite sets fn (nil: none) to run before each write, with the
// request as the server will read it (under a chroot, rewritten); an
// error fails the write and closes the connection, as a real failed write
// does. A test seam.
func (t *Tap) SetOnWrite(fn func(op int32, b []byte) error) {
	if fn == nil {
		t.onWrite.Store(nil)
		return
	}
	t.onWrite.Store(&fn)
}

// Expect registers interest in the next request written with one of the
// opcodes ops whose first path is key (a create's path, the first op's of a
// multi). Keys are unique: a protected name's GUID, a node's path.
func (t *Tap) Expect(key string, ops ...int32) *Waiter { return t.ExpectFunc(key, nil, ops...) }

// ExpectFunc is Expect that also calls fn (nil: nothing) once the request
// is written, on the goroutine that wrote it: fn must be quick and must
// not block.
func (t *Tap) ExpectFunc(key string, fn func(), ops ...int32) *Waiter {
	w := &Waiter{ops: ops, sent: make(chan struct{}), then: fn, key: key}
	t.mu.Lock()
	if t.waiters == nil {
		t.waiters = make(map[string]*Waiter)
	}
	t.waiters[key] = w
	t.n.Store(int32(len(t.waiters)))
	t.mu.Unlock()
	return w
}

// Forget drops a waiter whose request completed or failed without being
// seen (for example because the connection closed first).
func (t *Tap) Forget(key string, w *Waiter) {
	t.mu.Lock()
	if t.waiters[key] == w {
		delete(t.waiters, key)
		t.n.Store(int32(len(t.waiters)))
	}
	t.mu.Unlock()
}

// Mark returns how many writes of requests (pings not counted) have
// begun: a request queued after mark is written as a later one.
func (t *Tap) Mark() int64 {
	t.ringMu.Lock()
	defer t.ringMu.Unlock()
	return t.writes
}

// FirstWriteAfter returns when the first write of a request after mark
// began, or ok false when that write has not begun or has left the ring.
func (t *Tap) FirstWriteAfter(mark int64) (at time.Time, ok bool) {
	t.ringMu.Lock()
	defer t.ringMu.Unlock()
	w := mark + 1
	if w > t.writes || t.writes-w >= RingSize-1 {
		return time.Time{}, false
	}
	return mono.Time(t.ring[w%RingSize]).Std(), true
}

// began records the start of a write of frame, unless frame is a ping.
// The ring dates proofs (FirstWriteAfter): a request queued after a mark
// is written no earlier than the first request written after it, since
// go-zookeeper writes its requests in their order. Its pings are not in
// that order: its ticker's ping may go out between a request's queueing
// and its write, and dated by it, the proof was as old as its queueing
// (TestPingDatesNoProof; zklock.TestLeaseCountsFromTheWrite lapsed so,
// with a busy core beside it, once in five make tests).
func (t *Tap) began(frame []byte, start time.Time) {
	ping := opcode(frame) == opPing
	if mutant.On(mutant.PingsInRing) {
		ping = false // seeded bug: a ping dates the proofs queued before it
	}
	if ping {
		return
	}
	t.ringMu.Lock()
	t.writes++
	t.ring[t.writes%RingSize] = int64(mono.Of(start))
	t.ringMu.Unlock()
}

// count counts a request of opcode op (Written).
func (t *Tap) count(op int32) {
	if op >= 0 && int(op) < len(t.written) {
		t.written[op].Add(1)
	}
}

// wrote tells w (nil: none), the waiter take found for a request, that
// its bytes are out.
func (t *Tap) wrote(w *Waiter) {
	if w != nil {
		close(w.sent)
		if w.then != nil {
			w.then()
		}
	}
}

// take takes the waiter of the request framed in b out of the waiters as
// its write begins at start, and dates it (nil when it has none). Taken
// there and not once the bytes are out: by then an earlier request of the
// same key (the lease's previous sync) could have been answered and the
// next one's waiter registered, which took the earlier write for its own,
// a whole renewal early (TestLateToldWriteTakesNoLaterWaiter).
func (t *Tap) take(b []byte, start time.Time) *Waiter {
	op := opcode(b)
	if t.n.Load() == 0 || op < 0 {
		return nil
	}
	p := firstPath(b, op)
	if p == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.waiters[string(p)] // no allocation: the compiler looks up string(bytes) in place
	if w == nil || !slices.Contains(w.ops, op) {
		return nil
	}
	delete(t.waiters, string(p))
	t.n.Store(int32(len(t.waiters)))
	w.at.Store(int64(mono.Of(start)))
	return w
}

package session

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// The locks' listings, sent together (issue 72). On a session the floor
// dialed, the listings waiting go out as one multiRead (ZooKeeper 3.6 and
// later; the wire tap sends it, wire/call.go), at most two requests out
// at a time: a quiet session lists each as it comes, a busy one many paths
// a round trip. Each listing is the lock path's children and then its
// stat (wire.ParseListings says why in that order):
// what go-zookeeper's getChildren2 gives, the fencing token its stat's
// pzxid. A listing is queued only after what it must come behind is on
// the wire (an acquisition's create: its Sent), and a multiRead written
// after that goes out after it, as go-zookeeper's own request did.
//
// A goroutine of the floor's sends while listings wait, and ends when
// none does: the caller whose listing found a sender free starts it. What
// it buys: the callers wait for their own listing only (their ctx ends
// their wait, not others'), one goroutine a batch where each listing had
// one. Two senders, not one: with one, a listing that came while a batch
// was out waited its whole round trip before going, where go-zookeeper's
// getChildren2 went at once; on a few keys, where listings seldom meet,
// that was the tail (issue 72: at 4 × 8 × 16 the p99's median 54 ms with
// one sender, 43 with two, 44 before the multiRead). With two, such a
// listing goes at once on the second; only a listing that finds both out
// waits, and under load the two carry many paths each.
//
// Dial asks the server for an empty multiRead before any lock lists
// (probe): a server that does not know it (before 3.6) answers
// Unimplemented and closes the connection (its UnimplementedRequestProcessor),
// which go-zookeeper then makes again, before any hold can be lost with
// it; the session's listings then go as go-zookeeper's getChildren2 (List's
// caller falls back). A probe that got no answer (the connection lost, or
// a second gone by on a loaded machine) says nothing of the server, and
// leaves multiRead on: a later refusal (Unimplemented from that server, or
// one replaced by an older one) turns it off, its batch listed one by one.

// lister is the floor's queue of listings (nil tap: never used).
type lister struct {
	f   *Floor
	off atomic.Bool // the server refused multiRead: every listing is go-zookeeper's

	mu      sync.Mutex
	waiting []*listing
	senders int // senders running: each takes waiting before it ends
}

// maxSenders bounds the lister's requests out (see above).
const maxSenders = 2

// listing is one path's listing, waited for by its caller.
type listing struct {
	path     string
	admitted time.Time     // when its caller handed it over (the Flight's round trip)
	done     chan struct{} // closed once children, stat and err are set
	children []string
	stat     *zk.Stat
	err      error
}

// ErrNoMultiRead tells List's caller to list with go-zookeeper instead:
// its place in the Flight is its own still.
var ErrNoMultiRead = errors.New("zklock: the server does not take multiRead")

// Batches: at most maxListings paths, within the request bound the writes
// keep (requestLimit), so that the answer, a few names a path, stays far
// below what the tap reads whole (wire's maxRewritten).
const maxListings = 1024

// List lists path, a listing Admit gave a place to (given back as it is
// answered), through the session's multiRead queue; ErrNoMultiRead when
// the session has none (a connection of the caller's, WithoutPipelining's
// one request at a time, or a server that refused it): then the caller
// lists with go-zookeeper.
func (s *Floor) List(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	ls := &s.lister
	if s.tap == nil || s.cfg.NoPipelining || ls.off.Load() {
		return nil, nil, ErrNoMultiRead
	}
	l := &listing{path: path, admitted: time.Now(), done: make(chan struct{})}
	ls.mu.Lock()
	ls.waiting = append(ls.waiting, l)
	start := ls.senders < maxSenders
	if start {
		ls.senders++
	}
	ls.mu.Unlock()
	if start {
		s.Go(ls.run)
	}
	select {
	case <-l.done:
		return l.children, l.stat, l.err
	case <-ctx.Done():
		return nil, nil, ctx.Err() // its place is given back when it is answered
	}
}

// run sends what waits, batch by batch, until nothing does.
func (ls *lister) run() {
	if hook := testSenderHook.Load(); hook != nil {
		(*hook)()
	}
	for {
		batch := ls.take()
		if batch == nil {
			return
		}
		ls.send(batch)
	}
}

// take takes the next batch off the queue, or ends the sender (nil) when
// none waits.
func (ls *lister) take() []*listing {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if len(ls.waiting) == 0 {
		ls.senders--
		return nil
	}
	limit, size := requestLimit(ls.f.cfg.JuteMax), wire.MultiReadBase
	n := 0
	for n < len(ls.waiting) && n < maxListings {
		size += wire.ListingSize(ls.f.tap.PathLen(ls.waiting[n].path))
		if n > 0 && size > limit {
			break
		}
		n++
	}
	batch := ls.waiting[:n:n]
	ls.waiting = ls.waiting[n:]
	if len(ls.waiting) == 0 {
		ls.waiting = nil
	}
	return batch
}

// send sends one batch as a multiRead and answers each listing of it.
func (ls *lister) send(batch []*listing) {
	f, tap := ls.f, ls.f.tap
	paths := make([]string, len(batch))
	for i, l := range batch {
		paths[i] = l.path
		trace.Sent(f.zc, trace.OpList, l.path)
	}
	tap.Handed()
	r, err := tap.Call(f.life.ctx, wire.OpMultiRead, wire.AppendListings(nil, paths))
	tap.Answered()
	var got []wire.Listing
	switch {
	case err == nil && r.Err != 0: // refused whole: Unimplemented before 3.6
		ls.refused(r.Err)
		got = ls.oneByOne(paths)
	case err == nil:
		got, err = wire.ParseListings(r, len(batch))
	case errors.Is(err, wire.ErrCallLost), errors.Is(err, wire.ErrNotConnected):
		err = zk.ErrConnectionClosed // its fate unknown, as go-zookeeper tells a request the connection took
	}
	for i, l := range batch {
		if err != nil {
			l.err = err
		} else if l.err = got[i].Err; l.err == nil {
			l.children, l.stat = got[i].Children, &got[i].Stat
		}
		trace.Listed(f.zc, trace.OpList, l.path, l.children, l.stat, l.err)
		f.flight.release(time.Since(l.admitted), f.lease.Timeout()/32)
		close(l.done)
	}
}

// oneByOne lists paths with go-zookeeper's getChildren2, one after the
// other: the batch that found multiRead refused.
func (ls *lister) oneByOne(paths []string) []wire.Listing {
	got := make([]wire.Listing, len(paths))
	for i, p := range paths {
		c, st, err := ls.f.zc.Children(p)
		got[i].Children, got[i].Err = c, err
		if st != nil {
			got[i].Stat = *st
		}
	}
	return got
}

// probe asks for an empty multiRead (see above), within ctx and a
// second: one round trip per session, at Dial.
func (ls *lister) probe(ctx context.Context) {
	if ls.f.cfg.NoPipelining {
		return // every listing goes as go-zookeeper's, one request at a time
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	r, err := ls.f.tap.Call(ctx, wire.OpMultiRead, wire.AppendListings(nil, nil))
	if err == nil && r.Err != 0 {
		ls.refused(r.Err)
	}
}

// refused turns multiRead off for the session's life, and says so once:
// at Dial's probe, or at the first batch a server refused later (a
// session that moved to an older member of an ensemble mid-upgrade).
func (ls *lister) refused(code int32) {
	if ls.off.CompareAndSwap(false, true) {
		ls.f.log.Info("listings go one by one: the server refused multiRead (ZooKeeper 3.6 or later takes it)",
			"code", code)
	}
}

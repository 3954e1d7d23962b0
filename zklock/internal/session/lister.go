package session

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// The locks' listings, sent together. On a session the floor
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
// A waiter's read of its predecessor with a data watch (Watch) goes in
// the same batches: a getData in the multiRead, which sets no watch, and
// the watches of the batch's reads in one setWatches written just before
// it (wire.AppendSetWatches says how the server takes it). What it buys:
// at many keys nearly every acquisition waits, and its GetW was the one
// request of its own left (0.99 of 1.02 requests per acquisition at 4 ×
// 1000 × 1000; a goroutine of the Flight's each); now a batch's reads
// cost two requests.
//
// A goroutine of the floor's sends while listings wait, and ends when
// none does: the caller whose listing found a sender free starts it. What
// it buys: the callers wait for their own listing only (their ctx ends
// their wait, not others'), one goroutine a batch where each listing had
// one. Two senders, not one: with one, a listing that came while a batch
// was out waited its whole round trip before going, where go-zookeeper's
// getChildren2 went at once; on a few keys, where listings seldom meet,
// that was the tail (at 4 × 8 × 16 the p99's median 54 ms with one
// sender, 43 with two, 44 with each listing its own getChildren2:
// docs/bench/issue72-two-senders-ab.txt). With two, such a
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
	f        *Floor
	off      atomic.Bool // the server refused multiRead: every listing is go-zookeeper's
	watchOff atomic.Bool // the server refused setWatches: every watch is go-zookeeper's GetW

	mu      sync.Mutex
	waiting []*listing
	senders int // senders running: each takes waiting before it ends
}

// maxSenders bounds the lister's requests out (see above).
const maxSenders = 2

// listing is one path's listing, or a node's read with a data watch
// (watch: Watch), waited for by its caller.
type listing struct {
	path     string
	watch    bool
	untraced bool          // a read the trace does not record (Watch's traced)
	admitted time.Time     // when its caller handed it over (the Flight's round trip)
	done     chan struct{} // closed once children (or data), stat and err are set
	children []string
	data     []byte
	stat     *zk.Stat
	err      error
}

// Batches: at most maxListings paths, within the request bound the writes
// keep (requestLimit), so that the answer, a few names a path, stays far
// below what the tap reads whole (wire's maxRewritten).
const maxListings = 1024

// on reports whether the session's listings go as multiReads.
func (ls *lister) on() bool {
	return ls.f.tap != nil && !ls.f.cfg.NoPipelining && !ls.off.Load()
}

// run sends what waits, batch by batch, until nothing does.
func (ls *lister) run() {
	if h := ls.f.cfg.Hooks; h != nil && h.Sending != nil {
		h.Sending()
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
	n := ls.batchLen()
	batch := ls.waiting[:n:n]
	ls.waiting = ls.waiting[n:]
	if len(ls.waiting) == 0 {
		ls.waiting = nil
	}
	return batch
}

// batchLen is how many of those waiting the next batch takes, in order:
// at most maxListings, its multiRead and its setWatches each within the
// bound the writes keep (requestLimit), and at most maxReads node reads,
// so that their answer, each node's data at most the server's bound on a
// request, stays within what the tap reads whole (wire.MaxReply): 32
// under ZooKeeper's default jute.maxbuffer (zklock.TestReadsPerBatchBounded).
func (ls *lister) batchLen() int {
	limit := requestLimit(ls.f.cfg.JuteMax)
	maxReads := max(1, wire.MaxReply/2/limit)
	size, reads, watchedLen := wire.MultiReadBase, 0, 0
	n := 0
	for ; n < len(ls.waiting) && n < maxListings; n++ {
		l := ls.waiting[n]
		k := ls.f.tap.PathLen(l.path)
		if !l.watch {
			size += wire.ListingSize(k)
		} else if reads == maxReads {
			break
		} else {
			size, reads, watchedLen = size+wire.NodeReadSize(k), reads+1, watchedLen+k
		}
		if n > 0 && (size > limit || wire.SetWatchesSize(watchedLen, reads) > limit) {
			break
		}
	}
	return n
}

// send sends one batch, a multiRead behind the setWatches of its node
// reads, if any, and answers each listing and read of it. Both requests
// go in one write (wire's Calls): the server sets the watches, then reads.
// The setWatches' relativeZxid is the highest: a node changed before
// the watch is set does not fire it (the read after it shows the node as
// it is), one gone fires it at once. A batch of one read with a watch, a
// lone waiter's (few keys), goes as go-zookeeper's GetW: one request where
// the pair is two. The sender waits for its answer, as for a batch's: what
// comes meanwhile goes together after it (on 16 paths at 4 × 8, 2.40
// requests per acquisition, where a GetW on a goroutine of its own, the
// sender going on at once, made 2.56 and 0.94x the throughput).
func (ls *lister) send(batch []*listing) {
	f, tap := ls.f, ls.f.tap
	for _, l := range batch {
		if !l.untraced {
			trace.Sent(f.zc, l.op(), l.path)
		}
	}
	if len(batch) == 1 && batch[0].watch && !ls.ownAlone() {
		ls.answer(batch, ls.oneByOne(batch), nil)
		return
	}
	var body []byte
	var watched []string
	nodes := make([]bool, len(batch))
	for i, l := range batch {
		if nodes[i] = l.watch; l.watch {
			body, watched = wire.AppendNodeRead(body, l.path), append(watched, l.path)
		} else {
			body = wire.AppendListing(body, l.path)
		}
	}
	reqs := []wire.Request{{Op: wire.OpMultiRead, Body: wire.AppendEnd(body)}}
	if len(watched) > 0 {
		set := wire.Request{Op: wire.OpSetWatches, Body: wire.AppendSetWatches(nil, math.MaxInt64, watched)}
		reqs = append([]wire.Request{set}, reqs...)
	}
	tap.Handed()
	rs, err := tap.Calls(f.life.ctx, reqs...)
	tap.Answered()
	var got []wire.Listing
	switch {
	case err == nil && rs[len(rs)-1].Err != 0: // refused whole: Unimplemented before 3.6
		ls.refused(rs[len(rs)-1].Err)
		got = ls.oneByOne(batch)
	case err == nil && rs[0].Err != 0: // the watches not set
		ls.watchesRefused(rs[0].Err)
		got = ls.oneByOne(batch)
	case err == nil:
		got, err = wire.ParseReads(rs[len(rs)-1], nodes)
	case errors.Is(err, wire.ErrCallLost), errors.Is(err, wire.ErrNotConnected):
		err = zk.ErrConnectionClosed // its fate unknown, as go-zookeeper tells a request the connection took
	}
	ls.answer(batch, got, err)
}

// op is the request l's trace names: a listing, or a read with a watch.
func (l *listing) op() trace.Op {
	if l.watch {
		return trace.OpGetW
	}
	return trace.OpList
}

// answer gives each listing of batch its answer, got[i] (err: all failed
// with it), and its place in the Flight back.
func (ls *lister) answer(batch []*listing, got []wire.Listing, err error) {
	f := ls.f
	for i, l := range batch {
		if err != nil {
			l.err = err
		} else if l.err = got[i].Err; l.err == nil {
			l.children, l.data, l.stat = got[i].Children, got[i].Data, &got[i].Stat
		}
		switch {
		case l.untraced: // not recorded (Watch)
		case l.watch:
			trace.Watched(f.zc, l.path, l.stat, l.err)
		default:
			trace.Listed(f.zc, trace.OpList, l.path, l.children, l.stat, l.err)
		}
		f.flight.release(time.Since(l.admitted), f.lease.Timeout()/32)
		close(l.done)
	}
}

// oneByOne sends the batch's requests as go-zookeeper's, one after the
// other (getChildren2, GetW): the batch that found multiRead, or
// setWatches, refused. GetW's channel is not read: its event reaches the
// Watches as every event does.
func (ls *lister) oneByOne(batch []*listing) []wire.Listing {
	got := make([]wire.Listing, len(batch))
	for i, l := range batch {
		var st *zk.Stat
		if l.watch {
			got[i].Data, st, _, got[i].Err = ls.f.zkGetW(l.path, false)
		} else {
			got[i].Children, st, got[i].Err = ls.f.zkChildren(l.path, false)
		}
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

// watchesRefused turns the session's own watches off for its life, and
// says so once: every watch is then go-zookeeper's GetW.
func (ls *lister) watchesRefused(code int32) {
	if ls.watchOff.CompareAndSwap(false, true) {
		ls.f.log.Info("watches go one by one: the server refused setWatches", "code", code)
	}
}

// ownAlone reports whether a test has a batch of one read with a watch go
// as the session's own (Hooks.OwnAlone).
func (ls *lister) ownAlone() bool {
	h := ls.f.cfg.Hooks
	return h != nil && h.OwnAlone != nil && h.OwnAlone()
}

package main

import (
	"context"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// What ZooKeeper tells of a holder beyond its node's data: since when it
// has led the queue, and its fencing token. Neither is stored anywhere:
// a node's ctime is when it queued, not when its predecessor's delete
// handed it the lock, and zklock's token is the pzxid of the listing in
// which the holder found itself first (zklock's waitTurn), which only the
// holder saw. What the stats show exactly:
//
//   - The lock path's pzxid is the zxid of the last change to its
//     children. When it is the czxid of the listing's last node, nothing
//     changed after that node queued: every predecessor of the first node
//     was gone by then, so the first node has led the queue since that
//     node's ctime at the latest. When the last node is the first, the
//     queue has not changed since the holder queued: it has led since its
//     own ctime, exactly, and its listing, pipelined behind its create,
//     saw this pzxid: its token is its czxid, exactly.
//   - Otherwise the last change was a delete (or a create of a child that
//     is not a lock node): perhaps the hand-off, whose time ZooKeeper does
//     not keep. The holder has led for at most as long as it has queued,
//     and its token is at least its node's czxid.
//
// Sequence numbers do not help: ZooKeeper 3.8 numbers creates only (a
// delete does not move the next number), 3.4 counted deletes too.

// queueStat is what the bounds are drawn from: stats read after the
// listing, so that a change the listing missed shows as one after it.
type queueStat struct {
	pzxid int64 // the lock path's: the zxid of the last change to its children
	first int64 // czxid of the listing's first node
	last  int64 // czxid of the listing's last node
}

// readQueueStat is readQueueStats for one listing.
func (c *cli) readQueueStat(ctx context.Context, lockPath string, ps []zklock.Participant) queueStat {
	return c.readQueueStats(ctx, []string{lockPath}, [][]zklock.Participant{ps})[0]
}

// readQueueStats reads, for each listing lists[i] of lockPaths[i], the
// stats of the lock path and of the listing's first and last nodes, all
// requests in flight together (up to maxStatsInFlight). An empty listing
// has the zero queueStat, which bounds nothing; so has every listing when
// a request fails (a lost connection: watch goes on, and shows "?").
func (c *cli) readQueueStats(ctx context.Context, lockPaths []string, lists [][]zklock.Participant) []queueStat {
	var paths []string
	at := make([][3]int, len(lists)) // where in paths the lock path, first and last node are
	for i, ps := range lists {
		if len(ps) == 0 {
			continue
		}
		n, p := len(paths), lockPaths[i]
		paths = append(paths, p, p+"/"+ps[0].Node)
		at[i] = [3]int{n, n + 1, n + 1}
		if len(ps) > 1 {
			paths = append(paths, p+"/"+ps[len(ps)-1].Node)
			at[i][2] = n + 2
		}
	}
	out := make([]queueStat, len(lists))
	st, err := stats(ctx, c.s.Conn(), paths)
	if err != nil {
		return out
	}
	for i, ps := range lists {
		if len(ps) == 0 {
			continue
		}
		lock, first, last := st[at[i][0]], st[at[i][1]], st[at[i][2]]
		if lock != nil && first != nil && last != nil {
			out[i] = queueStat{pzxid: lock.Pzxid, first: first.Czxid, last: last.Czxid}
		}
	}
	return out
}

// maxStatsInFlight bounds the exists requests stats has on the wire, as
// zklock bounds a listing's reads.
const maxStatsInFlight = 64

// stats reads the stat of each of paths, up to maxStatsInFlight requests
// in flight at once (go-zookeeper pipelines requests made concurrently);
// a missing node's stat is nil. As await.Call, it gives up when ctx ends; the
// requests in flight then finish in the background, and no more start.
func stats(ctx context.Context, conn *zk.Conn, paths []string) ([]*zk.Stat, error) {
	type result struct {
		i   int
		st  *zk.Stat
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan result, len(paths))
	slots := make(chan struct{}, maxStatsInFlight)
	go func() {
		for i, p := range paths {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() {
				ok, st, err := conn.Exists(p)
				if !ok {
					st = nil
				}
				<-slots
				ch <- result{i, st, err}
			}()
		}
	}()
	out := make([]*zk.Stat, len(paths))
	for range paths {
		select {
		case r := <-ch:
			if r.err != nil {
				return nil, r.err
			}
			out[r.i] = r.st
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// holding sets on v, the view of the listing's first node (a holder), how
// long it has led the queue and its token, as far as st shows them (see
// queueStat); last is the listing's last node.
func (st queueStat) holding(v *nodeView, last zklock.Participant, now time.Time) {
	if st.first == 0 {
		return // not read
	}
	v.Token = st.first
	switch st.pzxid {
	case st.first:
		held := v.AgeSec
		v.HeldSec, v.HeldExact, v.TokenExact = &held, true, true
	case st.last:
		held := max(0, seconds(now.Sub(last.Created)))
		v.HeldSec = &held
	}
}

// seconds is d in seconds, to the millisecond, as the JSON ages are.
func seconds(d time.Duration) float64 { return d.Round(time.Millisecond).Seconds() }

// heldText is the HELD column: how long the holder has led the queue,
// "≥" marking a lower bound, "?" when ZooKeeper does not show it.
func (v *nodeView) heldText() string {
	switch {
	case v == nil:
		return "-"
	case v.HeldSec == nil:
		return "?"
	case v.HeldExact:
		return age(*v.HeldSec)
	}
	return "≥" + age(*v.HeldSec)
}

// tokenText is the TOKEN column: the holder's fencing token in decimal,
// as Hold.Token returns it, "≥" marking a lower bound, "?" when unknown.
func (v *nodeView) tokenText() string {
	switch {
	case v == nil:
		return "-"
	case v.Token == 0:
		return "?"
	case v.TokenExact:
		return strconv.FormatInt(v.Token, 10)
	}
	return "≥" + strconv.FormatInt(v.Token, 10)
}

// seenHolders is what a watch adds: for each lock path, the holder it
// listed and when it first did. The holder has led the queue since then
// at least, a bound ZooKeeper does not give after a hand-off ("?"), and a
// tight one when the watch saw the hand-off happen.
type seenHolders map[string]seenHolder

// seenHolder is a holder's node, and when a listing first showed it.
type seenHolder struct {
	node string
	at   time.Time // when the listing returned: the node led at its read, before
}

// note records the holder of ps, p's queue as listed at at, unless it is
// the one already recorded; an empty queue forgets p.
func (s seenHolders) note(p string, ps []zklock.Participant, at time.Time) {
	switch {
	case len(ps) == 0:
		delete(s, p)
	case s[p].node != ps[0].Node:
		s[p] = seenHolder{node: ps[0].Node, at: at}
	}
}

// bound raises the held time of q's first node, listed at listed, to at
// least the time since an earlier listing first showed it holding, if one
// did and its time is not exact. (The listing that first shows a holder
// adds nothing: it held at least 0s.)
func (s seenHolders) bound(q *queueView, listed, now time.Time) {
	if len(q.Nodes) == 0 || !q.Nodes[0].Holder || q.Nodes[0].HeldExact {
		return
	}
	v, h := &q.Nodes[0], s[q.Path]
	if h.node == "" || v.Node != q.Path+"/"+h.node || !h.at.Before(listed) {
		return
	}
	if held := max(0, seconds(now.Sub(h.at))); v.HeldSec == nil || held > *v.HeldSec {
		v.HeldSec = &held
	}
}

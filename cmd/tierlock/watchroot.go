package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// watchRoot follows every lock at or below root, those created after it
// started included, until ctx ends or -count lines (the first listing
// counting as one) have been printed; printed says how many listings
// watch printed before it switched here. It prints the locks as ls does
// (one line each, a TIME and an EVENT column added, then the legend and
// the total), then one line each time a lock's holder or queue changes:
// acquired (a lock that had no node has one), released (its last node
// went), new-holder, queue (the waiters changed, or a node's data).
//
// Every znode under root that is not a lock node keeps a children watch:
// a directory's fires when a lock path (or a directory) is created or
// deleted under it, a lock path's when its queue changes. A fired watch
// re-lists that znode alone, and descends into znodes it has not seen.
// As for a single lock, a watch is armed before its listing, so no change
// is missed for good, and an expiry fires every watch (EventNotWatching),
// which re-arms it on the new session.
//
// Cost: one watch per znode under root on the server; per change, one
// getChildren with a watch, and a ListParticipants and readQueueStat of
// the lock that changed.
func (c *cli) watchRoot(ctx context.Context, root string, printed int) error {
	w := &rootWatch{
		c: c, root: root, printed: printed,
		out:   &table{w: c.stdout, widths: []int{len("15:04:05.000"), len("new-holder")}, max: maxWidth},
		fired: make(chan string), done: make(chan struct{}),
		armed: map[string]bool{}, last: map[string]listing{}, seen: seenHolders{},
	}
	defer close(w.done) // ends the goroutines that wait for a watch
	err := w.scan(ctx, root)
	if err == nil {
		err = w.printFirst(ctx)
	}
	for err == nil && !w.enough() {
		select {
		case p := <-w.fired:
			delete(w.armed, p)
			err = w.scan(ctx, p)
		case <-ctx.Done():
			return nil
		}
	}
	return unlessInterrupted(ctx, err)
}

// rootWatch is the state of watchRoot: what is watched, and what was
// last shown of each lock.
type rootWatch struct {
	c       *cli
	root    string
	out     *table
	printed int  // listings and lines printed
	started bool // the first listing is printed: changes are printed from now on

	fired chan string   // the path of a fired watch
	done  chan struct{} // closed when watchRoot returns

	armed map[string]bool    // znodes with a children watch set
	last  map[string]listing // each lock path's queue as last shown (non-empty)
	seen  seenHolders        // each lock path's holder, and when first listed
}

// listing is a lock path's queue as read, when the read returned, and the
// stats read after it.
type listing struct {
	ps []zklock.Participant
	at time.Time
	st queueStat
}

func (w *rootWatch) enough() bool { return w.c.count > 0 && w.printed >= w.c.count }

// scan watches p and lists it if it is a lock path, then does the same
// for each znode below it that is not watched yet. A p that does not exist
// is forgotten, but for the root, on which an exists watch waits for it.
func (w *rootWatch) scan(ctx context.Context, p string) error {
	if p == "/zookeeper" || w.armed[p] {
		return nil
	}
	kids, fired, err := w.c.arm(ctx, p, p == w.root)
	if errors.Is(err, zk.ErrNoNode) {
		return w.gone(p)
	}
	if err != nil {
		return err
	}
	w.armed[p] = true
	go w.forward(p, fired)
	var l listing
	if slices.ContainsFunc(kids, isLockNode) {
		if l.ps, err = zklock.ListParticipants(ctx, w.c.s, p); err != nil {
			return err
		}
		l.at = time.Now()
		if w.started { // the first listing's are read together (printFirst)
			l.st = w.c.readQueueStat(ctx, p, l.ps)
		}
	}
	if err := w.update(p, l); err != nil {
		return err
	}
	slices.SortFunc(kids, naturalCompare)
	for _, k := range kids {
		if isLockNode(k) {
			continue
		}
		if err := w.scan(ctx, path.Join(p, k)); err != nil {
			return err
		}
	}
	return nil
}

// forward passes on that p's watch fired, until watchRoot returns.
func (w *rootWatch) forward(p string, fired <-chan zk.Event) {
	select {
	case <-fired:
		select {
		case w.fired <- p:
		case <-w.done:
		}
	case <-w.done:
	}
}

// gone forgets the locks at and below p, which no longer exists; a lock
// that still had nodes when last shown is released.
func (w *rootWatch) gone(p string) error {
	var locks []string
	for lp := range w.last {
		if lp == p || strings.HasPrefix(lp, p+"/") {
			locks = append(locks, lp)
		}
	}
	slices.SortFunc(locks, comparePaths)
	for _, lp := range locks {
		if err := w.update(lp, listing{}); err != nil {
			return err
		}
	}
	return nil
}

// update records lock path p's queue, and prints a line when it differs
// from the one last shown.
func (w *rootWatch) update(p string, l listing) error {
	w.seen.note(p, l.ps, l.at)
	prev, known := w.last[p]
	ps := l.ps
	var event string
	switch {
	case len(ps) == 0 && !known:
		return nil // not a lock (yet)
	case len(ps) == 0:
		event = "released"
		delete(w.last, p)
	case !known:
		event = "acquired"
	case sameQueue(prev.ps, ps):
		return nil
	case prev.ps[0].Node != ps[0].Node:
		event = "new-holder"
	default:
		event = "queue"
	}
	if len(ps) > 0 {
		w.last[p] = l
	}
	if !w.started {
		return nil
	}
	s := w.summary(p, l, time.Now())
	if len(ps) == 0 {
		s.Family = w.summary(p, prev, time.Now()).Family // what it was
	}
	return w.print(event, s)
}

// summary is the line of lock path p, listed as l, at now.
func (w *rootWatch) summary(p string, l listing, now time.Time) lockSummary {
	q := viewOf(p, l.ps, l.st, now)
	w.seen.bound(&q, l.at, now)
	return summarize(w.root, q)
}

// rootEvent is one line of watch -json on a root: a lock's state and
// what changed ("listed" for the first listing), or, once the first
// listing is done, "total".
type rootEvent struct {
	Time  time.Time `json:"time"`
	Event string    `json:"event"`
	*lockSummary
	Root  string  `json:"root,omitempty"`  // total only
	Total *totals `json:"total,omitempty"` // total only
}

var watchHeader = append([]string{"TIME", "EVENT"}, summaryHeader...)

// printFirst prints every lock known after the first scan, with the
// stats of them all, read together, then the legend and the total.
func (w *rootWatch) printFirst(ctx context.Context) error {
	w.started = true
	w.printed++
	paths := make([]string, 0, len(w.last))
	lists := make([][]zklock.Participant, 0, len(w.last))
	for p := range w.last {
		paths = append(paths, p)
	}
	slices.SortFunc(paths, comparePaths)
	for _, p := range paths {
		lists = append(lists, w.last[p].ps)
	}
	for i, st := range w.c.readQueueStats(ctx, paths, lists) {
		l := w.last[paths[i]]
		l.st = st
		w.last[paths[i]] = l
	}
	now := time.Now()
	ls := make([]lockSummary, 0, len(paths))
	for _, p := range paths {
		ls = append(ls, w.summary(p, w.last[p], now))
	}
	t := sum(ls)
	return w.c.printing(func() error { return w.printTable(now, ls, t) })
}

// printTable prints the first listing, ls, read at now, and its total.
func (w *rootWatch) printTable(now time.Time, ls []lockSummary, t totals) error {
	if w.c.json {
		for i := range ls {
			if err := printJSON(w.c.stdout, rootEvent{Time: now, Event: "listed", lockSummary: &ls[i]}); err != nil {
				return err
			}
		}
		return printJSON(w.c.stdout, rootEvent{Time: now, Event: "total", Root: w.root, Total: &t})
	}
	rows := [][]string{watchHeader}
	for _, l := range ls {
		rows = append(rows, append([]string{timeText(now), "listed"}, l.cells()...))
	}
	if err := w.out.rows(rows...); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w.c.stdout, "%s%s under %s; changes follow\n", legend, t, w.root)
	return err
}

// print prints one change.
func (w *rootWatch) print(event string, l lockSummary) error {
	w.printed++
	now := time.Now()
	return w.c.printing(func() error {
		if w.c.json {
			return printJSON(w.c.stdout, rootEvent{Time: now, Event: event, lockSummary: &l})
		}
		return w.out.rows(append([]string{timeText(now), event}, l.cells()...))
	})
}

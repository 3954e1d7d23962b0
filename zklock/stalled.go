package zklock

// Waits stalled behind a session with no connection. A process killed
// while its nodes are queued keeps them until its session expires (the
// session's timeout after it last spoke): each reaches the head of its
// queue in turn and holds it, and every key the dead process waited on
// stops, not only those it held. The waits of a live process standing
// behind such a node say so, once per episode and per dead session: a
// session's waits note their queue's head as they sleep (waiter.sleep
// asks stallRecheck for its timer), on the session's board once they
// have stood behind it for a sixth of the session timeout, and once one
// has stood behind the same head for a third of the session timeout, one
// goroutine asks every server which sessions have a connection (the
// four-letter word cons, package fourlw), at most once per third of the
// timeout for all the session's waits. A wait younger than a sixth is
// off the board (a busy lock's short waits so cost it nothing): a
// session found dead is told with the locks of the waits on the board,
// and a younger wait behind it joins its episode at the next check. A head's session that no server lists is told in one
// Warn with every lock it stalls here; its end (its nodes went, it has a
// connection again, or no wait stands behind it any more) in one more.
// Where the servers refuse cons (it is not in 4lw.commands.whitelist),
// that is told once, and the line says only how long the waits have
// stood behind that session.

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tierlock/tierlock/internal/fourlw"
	"github.com/tierlock/tierlock/zklock/internal/session"
)

// askConnections asks the servers for their connections; a test replaces
// it to play a server that refuses cons.
var askConnections = fourlw.AskConnections

// newSession is a Session over f, whose stalls ask servers (host:port,
// no chroot; nil: the server f's connection is on) as cfg dials them.
func newSession(f *session.Floor, servers []string, cfg sessionConfig) *Session {
	s := &Session{f: f}
	s.stalls.f, s.stalls.servers, s.stalls.onStall = f, servers, cfg.onStall
	s.stalls.ask = fourlw.Options{TLS: cfg.TLS, Timeout: time.Second, Dial: cfg.Dialer}
	return s
}

// stallBoard is a session's account of its waits that stand behind
// another session's node (see the top of this file). Its zero value
// tells nothing (a Session made without newSession).
type stallBoard struct {
	f       *session.Floor
	servers []string
	ask     fourlw.Options
	onStall func(Stall) // WithStallHandler; nil: none

	mu       sync.Mutex
	waits    map[*Lock]*stallWait    // the waits sleeping now, by lock (one acquisition at a time each)
	episodes map[int64]*stallEpisode // the sessions told to stall waits here, by id
	checking bool                    // a check is under way
	checked  time.Time               // when the last check began
	refused  bool                    // that the servers cannot say who is connected was told
}

// stallWait is one sleeping wait, as it last listed its queue.
type stallWait struct {
	path  string
	head  string    // the queue's first node
	since time.Time // since when head has been first, as this wait saw it
	owner int64     // head's session; 0 while not read
	who   string    // head's data as ParticipantID renders it
}

// stallEpisode is a session told to stall waits here, until its end is
// told.
type stallEpisode struct {
	id    int64
	who   string
	begun time.Time
	first time.Time       // since when the longest of its waits stood behind it
	known bool            // the servers said it has no connection
	keys  map[string]bool // the lock paths it stalls now
	all   []string        // every lock path it stalled in the episode
	went  bool            // a stalled wait saw its node go
}

// threshold is how long a wait stands behind one head before it is
// judged: a third of the session timeout.
func (b *stallBoard) threshold() time.Duration { return b.f.Lease().Timeout() / 3 }

// waiting notes that l's wait, our node name in session ours, sleeps on
// queue q, and starts a check when the wait has stood behind the same
// head for the threshold; it returns how long to sleep, at most recheck.
func (b *stallBoard) waiting(l *Lock, q []entry, name string, ours int64, recheck time.Duration) time.Duration {
	if b.f == nil {
		return recheck
	}
	if len(q) == 0 || q[0].name == name {
		b.left(l, q) // ours leads: nothing stalls it
		return recheck
	}
	now, head, th := time.Now(), q[0].name, b.threshold()
	if l.stood.head != head {
		l.stood.head, l.stood.since = head, now
	}
	// A wait younger than half the threshold has no check read its head
	// or ask of it (unread, suspects: that old and older): it stays off
	// the board, and its sleep ends when it is that old, to go on it. So
	// the many short waits of a busy lock take neither the board's lock
	// nor their view's; one behind a session a check finds dead meanwhile
	// joins that session's episode at a later check.
	if on := l.stood.since.Add(th / 2); !l.onBoard && now.Before(on) {
		return min(recheck, on.Sub(now))
	}
	var tell []func()
	b.mu.Lock()
	w := b.waits[l]
	if w == nil {
		if b.waits == nil {
			b.waits = map[*Lock]*stallWait{}
		}
		w = &stallWait{path: l.path}
		b.waits[l] = w
		l.onBoard = true
	}
	if w.head != head {
		tell = b.leaveLocked(w, true, now)
		w.head, w.since, w.owner, w.who = head, l.stood.since, 0, ""
	}
	if w.owner == 0 {
		w.owner, w.who = l.view.ownerOf(head)
	}
	if w.owner == ours {
		w.owner = 0 // our own session's node: a local holder, not a stall
	}
	d := recheck
	if due := w.since.Add(th); now.Before(due) {
		d = min(d, due.Sub(now))
	} else {
		b.checkLocked(now, th)
		d = min(d, th)
	}
	b.mu.Unlock()
	tellAll(tell)
	return d
}

// left notes that l's wait is over, or leads, its queue last read as q
// (nil: not known).
func (b *stallBoard) left(l *Lock, q []entry) {
	l.stood.head = ""
	if b.f == nil || !l.onBoard {
		return // an acquisition that never slept: nothing to take off
	}
	l.onBoard = false
	b.mu.Lock()
	w := b.waits[l]
	if w == nil {
		b.mu.Unlock()
		return
	}
	delete(b.waits, l)
	tell := b.leaveLocked(w, len(q) > 0 && q[0].name != w.head, time.Now())
	b.mu.Unlock()
	tellAll(tell)
}

// leaveLocked takes w's lock out of the episode of its head's session,
// if any: went says its node went. An episode left with no lock ends.
func (b *stallBoard) leaveLocked(w *stallWait, went bool, now time.Time) []func() {
	e := b.episodes[w.owner]
	if w.owner == 0 || e == nil || !e.keys[w.path] {
		return nil
	}
	delete(e.keys, w.path)
	e.went = e.went || went
	if len(e.keys) > 0 {
		return nil
	}
	delete(b.episodes, e.id)
	why := "no wait here stands behind it any more"
	if e.went {
		why = "its nodes ahead of ours went (its session expired, or they were deleted)"
	}
	return []func(){b.endLine(e, why, now)}
}

// endLine is the line that ends e, for why.
func (b *stallBoard) endLine(e *stallEpisode, why string, now time.Time) func() {
	log, all := b.f.Log(), slices.Sorted(slices.Values(e.all))
	st := Stall{Session: e.id, Holder: e.who, Locks: all, Disconnected: e.known, Waited: now.Sub(e.first), Ended: true, Why: why}
	return func() {
		log.Warn("locks no longer stalled behind session "+sessionHex(e.id)+": "+why,
			"session", sessionHex(e.id), "holder", e.who, "locks", all, "stalled_for", now.Sub(e.begun).Round(time.Millisecond))
		b.tellStall(st)
	}
}

// checkLocked starts a check, unless one ran within th or runs now, or
// the session has no connection of its own (no answer would say more).
func (b *stallBoard) checkLocked(now time.Time, th time.Duration) {
	if b.checking || now.Sub(b.checked) < th || b.f.Closed() || b.f.State() != session.StateConnected {
		return
	}
	b.checking, b.checked = true, now
	// A goroutine, so that no wait stops watching its queue while the
	// servers are asked (a server that does not answer holds the check
	// up to its timeout): one at a time per session, once per th at most.
	b.f.Go(b.check)
}

// stallLocked adds ws, the waits behind session id, to its episode, and
// returns the line that begins it (nil: it was told).
func (b *stallBoard) stallLocked(id int64, ws []*stallWait, known bool, maxT time.Duration, now time.Time, th time.Duration) func() {
	e, told := b.episodes[id]
	if !told {
		e = &stallEpisode{id: id, who: ws[0].who, begun: now, keys: map[string]bool{}}
		if b.episodes == nil {
			b.episodes = map[int64]*stallEpisode{}
		}
		b.episodes[id] = e
	}
	first := now
	for _, w := range ws {
		if !e.keys[w.path] {
			e.keys[w.path] = true
			e.all = append(e.all, w.path)
		}
		if w.since.Before(first) {
			first = w.since
		}
	}
	if told {
		return nil
	}
	e.known, e.first = known, first
	log, locks := b.f.Log(), slices.Sorted(slices.Values(e.all))
	st := Stall{Session: id, Holder: e.who, Locks: locks, Disconnected: known, Waited: now.Sub(first)}
	attrs := []any{"session", sessionHex(id), "holder", e.who, "locks", locks, "waited", now.Sub(first).Round(time.Millisecond)}
	msg := fmt.Sprintf("locks stalled behind session %s for about %v or longer (whether it has a connection is not known)", sessionHex(id), th.Round(time.Millisecond))
	if known {
		msg = "locks stalled behind session " + sessionHex(id) + ", which has no connection to ZooKeeper: its nodes hold them until it expires (its process may be gone)"
		if maxT > 0 {
			st.ExpiresWithin = maxT
			attrs = append(attrs, "expires_within", maxT) // the servers' maxSessionTimeout: no session lives longer unheard
		}
		attrs = append(attrs, "session_timeout_here", b.f.Lease().Timeout())
	}
	return func() {
		log.Warn(msg, attrs...)
		b.tellStall(st)
	}
}

// sessionHex renders a session id as ZooKeeper's logs and cons do.
func sessionHex(id int64) string { return fmt.Sprintf("0x%x", id) }

// tellAll runs the lines to tell, outside the board's lock.
func tellAll(tell []func()) {
	for _, fn := range tell {
		fn()
	}
}

// tellStall calls the handler, if any, with st.
func (b *stallBoard) tellStall(st Stall) {
	if b.onStall != nil {
		b.onStall(st)
	}
}

package zklock

// The check of a session's stalled waits (stalled.go says what it is
// for): the sessions of the heads they stand behind, read where the waits
// did not, and the servers' answer to which sessions have a connection.

import (
	"context"
	"errors"
	"time"

	"github.com/tierlock/tierlock/internal/fourlw"
)

// stallRead is a head whose session a check reads.
type stallRead struct {
	l    *Lock
	path string
	head string
}

// check reads the session of each head that has held a wait here for
// half the threshold and is not known yet, then asks the servers which
// sessions have a connection, and tells what changed.
func (b *stallBoard) check() {
	th := b.threshold()
	// Bounded, and ended by the session's Close, which waits for it.
	ctx, cancel := context.WithTimeout(untilClosed{context.Background(), b.f.Done()}, max(th, 2*time.Second))
	defer cancel()
	for _, r := range b.unread(time.Now(), th/2) {
		if b.f.Closed() {
			break
		}
		b.read(ctx, r)
	}
	var tell []func()
	if suspects := b.suspects(time.Now(), th); len(suspects) > 0 && !b.f.Closed() {
		servers := b.servers
		if servers == nil {
			servers = []string{b.f.Conn().Server()}
		}
		conns, err := askConnections(ctx, servers, b.ask)
		tell = b.judge(conns, err, time.Now(), th)
	}
	b.mu.Lock()
	b.checking = false
	b.mu.Unlock()
	tellAll(tell)
}

// unread lists the heads, first for at least d, whose session is not
// known.
func (b *stallBoard) unread(now time.Time, d time.Duration) []stallRead {
	b.mu.Lock()
	defer b.mu.Unlock()
	var rs []stallRead
	for l, w := range b.waits {
		if w.owner == 0 && now.Sub(w.since) >= d {
			rs = append(rs, stallRead{l: l, path: w.path, head: w.head})
		}
	}
	return rs
}

// read reads r's head, and notes its session while it is still the head.
func (b *stallBoard) read(ctx context.Context, r stallRead) {
	f := b.f
	var p *Participant
	err := f.Flight().Send(ctx, func() error {
		d, st, err := f.Conn().Get(r.path + "/" + r.head)
		if err == nil {
			p = participantOf(r.head, d, st)
		}
		return err
	})
	if err != nil || p.Owner == 0 || p.Owner == f.SessionID() {
		return // gone (the wait will see it), unanswered, or ours
	}
	b.mu.Lock()
	if w := b.waits[r.l]; w != nil && w.head == r.head {
		w.owner, w.who = p.Owner, ParticipantID(p.Data)
	}
	b.mu.Unlock()
}

// suspects are the sessions whose nodes have held a wait here for th.
func (b *stallBoard) suspects(now time.Time, th time.Duration) map[int64]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := map[int64]bool{}
	for _, w := range b.waits {
		if w.owner != 0 && now.Sub(w.since) >= th {
			s[w.owner] = true
		}
	}
	return s
}

// judge tells what the servers' answer (conns, or err) changes: a session
// with no connection stalls every wait here behind its nodes; where that
// is not known, a session whose nodes held a wait here for th stalls the
// waits that stood behind them for th/2 (they queued about together).
func (b *stallBoard) judge(conns fourlw.Connections, err error, now time.Time, th time.Duration) []func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	tell := b.refusedLocked(err)
	for id, e := range b.episodes {
		if err == nil && conns.Sessions[id] {
			delete(b.episodes, id)
			why := "its session has a connection again"
			if !e.known {
				why = "its session has a connection (the servers answer cons now)"
			}
			tell = append(tell, b.endLine(e, why, now))
		}
	}
	for id, ws := range b.behindLocked(conns, err, now, th) {
		if line := b.stallLocked(id, ws, err == nil, conns.MaxSessionTimeout, now, th); line != nil {
			tell = append(tell, line)
		}
	}
	return tell
}

// refusedLocked returns the line that tells, once, that the servers
// cannot say who is connected (err: they refuse cons or conf, or are not
// every member).
func (b *stallBoard) refusedLocked(err error) []func() {
	if err == nil || b.refused || !errors.Is(err, fourlw.ErrRefused) && !errors.Is(err, fourlw.ErrUnlisted) {
		return nil
	}
	b.refused = true
	log := b.f.Log()
	return []func(){func() {
		log.Warn("cannot tell whether a lock's holder has a connection to ZooKeeper: waits that stand long behind one session are told without it", "error", err)
	}}
}

// behindLocked groups by the head's session the waits that it stalls:
// every wait behind a session no server lists (conns); where that is not
// known (err), those that stood behind it for th/2.
func (b *stallBoard) behindLocked(conns fourlw.Connections, err error, now time.Time, th time.Duration) map[int64][]*stallWait {
	behind := map[int64][]*stallWait{}
	for _, w := range b.waits {
		stalled := err == nil && !conns.Sessions[w.owner] || err != nil && now.Sub(w.since) >= th/2
		if w.owner != 0 && stalled {
			behind[w.owner] = append(behind[w.owner], w)
		}
	}
	return behind
}

// untilClosed is a context that ends when done is closed (a session's
// Close), for a check that Close waits for.
type untilClosed struct {
	context.Context
	done <-chan struct{}
}

func (c untilClosed) Done() <-chan struct{} { return c.done }

func (c untilClosed) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

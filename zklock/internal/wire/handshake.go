package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"
)

// A connection's handshake: go-zookeeper writes the connect request and
// waits for its answer under a read deadline of 10 × its receive timeout
// (two thirds of the session timeout): 67 s with a 10-s session. A server
// that accepted the connection and never answers (ZooKeeper 3.8.0 after a
// failed start left its accepted sockets so) held the session that long,
// however many servers serve, and nothing told of it. So the tapped
// connection caps the deadline of every read before the answer at
// answerBound after the connect request was written: go-zookeeper's read
// then fails, it closes the connection and dials the next server, and the
// tap tells of it (UnansweredError, to Config.OnDial and LastDialErr).

// UnansweredError is a connection that a server accepted without
// answering the session's handshake: by After after the connect request
// was written (when the read gave up, or when this was asked).
type UnansweredError struct {
	Addr  string        // the server's, as dialed
	After time.Duration // since the connect request was written
}

func (e *UnansweredError) Error() string {
	return fmt.Sprintf("connected to %s, no answer to the handshake after %s", e.Addr, e.After.Round(time.Millisecond))
}

// answerBound is how long a server has to answer the connect request
// framed in b: two thirds of the session timeout T it asks for (0 when it
// names none). That is go-zookeeper's receive timeout, the silence after
// which it gives up a server it is connected to: the connect answer is
// held to the same. Less would give up servers merely slow to answer: a
// connect is answered only once the leader has committed the new session
// or revalidated the old one, a round trip through the quorum, not a
// follower's reply to a ping; a false give-up costs a dial, and for a new
// session an orphan that the server expires after T. More buys nothing a
// session can use: one to resume is expired by the leader T after it was
// last heard, and reaching the silence bound on the last server took 2T/3
// of that already. (The Java client gives a connection T/n, n servers,
// until the answer, then dials the next.)
func answerBound(b []byte) time.Duration {
	// length, protocol version, last zxid seen, then the timeout (ms).
	if len(b) < 20 {
		return 0
	}
	ms := int32(binary.BigEndian.Uint32(b[16:20]))
	return time.Duration(max(ms, 0)) * time.Millisecond * 2 / 3
}

// wroteConnect notes the connect request b, written at start: its answer
// is due by answerBound after it.
func (c *tappedConn) wroteConnect(b []byte, start time.Time) {
	c.connectOut = true
	if d := answerBound(b); d > 0 {
		c.answerBy = start.Add(d)
	}
	c.awaiting = &awaiting{addr: c.addr, at: start}
	c.tap.awaiting.Store(c.awaiting)
}

// readDeadline is the deadline go-zookeeper set (t; zero: none) as the
// socket is to keep it: before the connect answer, no later than the
// answer is due.
func (c *tappedConn) readDeadline(t time.Time) time.Time {
	if c.rep.shook || c.answerBy.IsZero() || (!t.IsZero() && t.Before(c.answerBy)) {
		return t
	}
	return c.answerBy
}

// handshakeRead notes the outcome of a read of the connect answer: once
// it is whole, the tap awaits it no more; a read that failed before says
// why the server never answered: silent past the bound (an
// UnansweredError, to OnDial and LastDialErr), refusing this side's TLS
// certificate, or a plain connection closed before a byte of the answer
// (a secure client port? probeTLS asks). Anything else is go-zookeeper's
// to tell, as it closes the connection and dials the next server.
func (c *tappedConn) handshakeRead(err error) {
	if !c.rep.shook && err == nil {
		return // still reading it
	}
	w := c.awaiting
	c.awaiting = nil
	c.tap.awaiting.CompareAndSwap(w, nil)
	if c.rep.shook {
		return
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		var e error = &UnansweredError{Addr: w.addr, After: time.Since(w.at)}
		c.tap.dialErr.Store(&e)
		select {
		case <-c.tap.closing:
			// go-zookeeper's Close leaves a handshake's read to its
			// deadline: told now, it would begin an outage after the
			// session's last line.
		default:
			if c.tap.onDial != nil {
				c.tap.onDial(w.addr, e)
			}
		}
	case c.tap.tls != nil && refusal(err):
		// A server that refuses this side's certificate after the
		// handshake (TLS 1.3) says so on the first read.
		c.tap.dialErr.Store(&err)
		c.tap.noteRefusal(c.addr, err)
	case c.tap.tls == nil && c.rep.nhead == 0:
		c.tap.probeTLS(c.addr) // closed before a byte of the answer: a secure port?
	}
}

// Unanswered returns the connection, if any, whose server has not yet
// answered its handshake, as an UnansweredError (After: so far); nil
// when none.
func (t *Tap) Unanswered() error {
	if w := t.awaiting.Load(); w != nil {
		return &UnansweredError{Addr: w.addr, After: time.Since(w.at)}
	}
	return nil
}

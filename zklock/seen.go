package zklock

// What an acquisition's own requests showed it of the queue, and what it
// tells of it: the position reports of a wait (WithPositionHandler), and
// the WaitError of one that ended without the lock. Nothing here sends a
// request.

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"
)

// Position is where an Acquire's node stands in the lock's queue, as of the
// latest listing of the queue the waiter read (CURATOR-592).
type Position struct {
	// Node is the full path of our node. A node that vanished while queued
	// is replaced by a new one (Acquire queues again): Node tells them apart.
	Node string
	// Ahead is how many nodes are queued before ours (0: ours is first).
	Ahead int
	// Queued is how many nodes are in the queue, ours included.
	Queued int
	// Holder is the full path of the first node in the queue: the holder
	// of a mutex (ours when Ahead is 0); for a read/write lock or a
	// semaphore, the oldest of possibly several holders.
	Holder string
	// Leads reports that our node may go now: Acquire is about to take
	// the hold. It is set on the last report of a successful Acquire (a
	// failure at that moment, such as a loss of the session, can still
	// follow it).
	Leads bool
}

// positions reports one queued node's place to the handler on the
// caller's goroutine, so reports come in order and never after Acquire
// returned; without a handler waitTurn makes no call.
type positions struct {
	fn   func(Position)
	node string
	dir  string // the lock path, for Holder
	last Position
	any  bool // last is set
}

// newPositions returns the reporter to fn of node, queued on the lock at
// dir; nil without a handler (fn nil), or a wait.
func newPositions(fn func(Position), node, dir string, wait bool) *positions {
	if fn == nil || !wait {
		return nil
	}
	return &positions{fn: fn, node: node, dir: dir}
}

// seen reports our node at index i of q, going or not, unless that is
// the position reported last (a re-check that finds nothing new).
func (p *positions) seen(q []entry, i int, goes bool) {
	pos := Position{Node: p.node, Ahead: i, Queued: len(q), Holder: p.dir + "/" + q[0].name, Leads: goes}
	if p.any && pos == p.last {
		return
	}
	p.last, p.any = pos, true
	p.fn(pos)
}

// WaitError is the error of an acquisition that ended without the lock
// once it had begun to queue: its context ended, its Lock or Session was
// closed, or a request failed for good. It says which lock, how long the
// acquisition waited, and who held the lock as far as the waiter knew,
// from what its own requests had already returned (no request is made to
// tell it): the queue's first node in the last listing, and the node it
// watched with its creator, as the watch's read returned them. errors.Is
// and errors.As see Err, so errors.Is(err, context.DeadlineExceeded)
// holds for a wait that timed out.
type WaitError struct {
	Path   string        // the lock path
	Waited time.Duration // from the call to its return
	// Ahead counts the nodes ahead of ours in the last listing: 0 when
	// ours led (the session could not grant it in time), -1 when no
	// listing found ours.
	Ahead int
	// Holder is the name of the queue's first node in the last listing
	// (the holder then); "" when none was read.
	Holder string
	// Watched is the node ours watched, with what its creator wrote
	// (Data) and its session (Owner), as the watch's read returned them;
	// nil when ours watched no node.
	Watched *Participant
	Err     error
}

func (e *WaitError) Error() string {
	return "zklock: acquire " + e.Path + ": waited " + e.Waited.Round(time.Millisecond).String() + ", " + e.Behind() + ": " + e.Err.Error()
}

// Unwrap returns why the wait ended.
func (e *WaitError) Unwrap() error { return e.Err }

// Behind says whom the acquisition waited behind, as the error's message
// does (package tier builds its own message around it).
func (e *WaitError) Behind() string {
	switch {
	case e.Holder == "":
		return "queue not read"
	case e.Ahead < 0:
		return "our node not in the queue, holder " + e.Holder
	case e.Ahead == 0:
		return "our node led, not yet granted by the session"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d ahead, holder %s", e.Ahead, e.Holder)
	if w := e.Watched; w != nil {
		if w.Node == e.Holder {
			b.WriteString(" (watched)")
		} else {
			b.WriteString(", watching " + w.Node)
		}
		b.WriteString(" created by " + ParticipantID(w.Data))
		if w.Owner != 0 {
			fmt.Fprintf(&b, " in session 0x%x", w.Owner)
		}
	}
	return b.String()
}

// ParticipantID renders what a lock node's creator wrote in it as an
// operator reads it, as the inspector's HOLDER column does: tierlock's
// JSON as pid@host and the quoted label (as Java names a process),
// Curator's address and kazoo's identifier quoted, anything else as its
// size.
func ParticipantID(data []byte) string {
	var d nodeData
	if json.Unmarshal(data, &d) == nil && d.Host != "" {
		s := strconv.Itoa(d.Pid) + "@" + d.Host
		if d.Label != "" {
			s += " " + strconv.Quote(d.Label)
		}
		return s
	}
	if IsRevocation(data) {
		return "a holder asked to release (" + RevokeMessage + ")"
	}
	if len(data) > 0 && len(data) <= 256 && utf8.Valid(data) && !strings.ContainsFunc(string(data), notPrintable) {
		return strconv.Quote(string(data))
	}
	return fmt.Sprintf("%d bytes of data", len(data))
}

func notPrintable(r rune) bool { return !unicode.IsPrint(r) }

// queueView is what an acquisition's own requests told it of the queue, kept
// for its WaitError: written and read by the acquiring goroutine only (a
// Lock serves one acquisition at a time: see begin).
type queueView struct {
	ahead   int
	holder  string
	watched *Participant
}

// sawQueue notes a listing in which our node is at index i (-1: absent).
func (v *queueView) sawQueue(q []entry, i int) {
	v.ahead = i
	if len(q) > 0 {
		v.holder = q[0].name
	}
}

// sawWatched notes the node our node watches, as its GetW returned it.
func (v *queueView) sawWatched(target string, data []byte, st *zk.Stat) {
	name := path.Base(target)
	p := &Participant{Node: name, Data: data}
	if st != nil {
		p.Owner, p.Created = st.EphemeralOwner, time.UnixMilli(st.Ctime)
	}
	if f, seq, ok := ParseNode(name); ok {
		p.Family, p.Sequence = f, seq
	}
	v.watched = p
}

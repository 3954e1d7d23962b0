package zklock

// What an acquisition's own requests showed it of the queue, as it tells
// it: a node as a read returned it (participantOf) and its data as words
// (ParticipantID), the Position of a wait (WithPositionHandler; the wait
// reports it: positions, wait.go), the WaitError of one that ended
// without the lock (holder.go makes it), and the lock's view of the queue
// it is made from (queueView: the wait writes it, holder.go reads it).
// Nothing here sends a request.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
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

// WaitError is the error of an acquisition that ended without the lock
// once it had begun to queue: its context ended, its Lock or Session was
// closed, or a request failed for good. It says which lock, how long the
// acquisition waited, and who held the lock: the queue's first node with
// what its creator wrote and its session. Those come from what the
// acquisition's own requests returned while they are known to be current
// (the node ours watched is the holder, and its watch had not fired);
// otherwise, for a wait whose context ended, from one read at its end
// (the queue, then its first node's data: a getChildren and a getData),
// never from a listing of an earlier node of ours. A wait that ends while
// the session has no connection to ZooKeeper reads nothing: it says since
// when (Outage), and errors.Is(err, ErrDisconnected) holds. errors.Is and
// errors.As see Err, so errors.Is(err, context.DeadlineExceeded) holds
// for a wait that timed out.
type WaitError struct {
	Path   string        // the lock path
	Waited time.Duration // from the call to its return
	// Ahead counts the nodes ahead of ours in the last listing: 0 when
	// ours led (the session could not grant it in time), -1 when no
	// listing found ours.
	Ahead int
	// Holder is the name of the queue's first node (the holder); "" when
	// none was known: the queue was not read, or was empty.
	Holder string
	// Owner is the holder's node as read, with what its creator wrote
	// (Data: ParticipantID renders it) and its session (Owner); nil when
	// it was not read.
	Owner *Participant
	// Watched is the node ours watched, with what its creator wrote
	// (Data) and its session (Owner), as the watch's read returned them;
	// nil when ours watched no node.
	Watched *Participant
	// Outage is when the session lost its connection to ZooKeeper, for a
	// wait that ended with none; zero otherwise.
	Outage time.Time
	Err    error

	ended   time.Time // when the wait ended: the outage's length is told up to then
	ours    bool      // the holder's node is this session's
	empty   bool      // the read found nobody queued
	readErr error     // the read of the holder failed
}

func (e *WaitError) Error() string {
	return "zklock: acquire " + e.Path + ": waited " + e.Waited.Round(time.Millisecond).String() + ", " + e.Behind() + ": " + e.Err.Error()
}

// Unwrap returns why the wait ended.
func (e *WaitError) Unwrap() error { return e.Err }

// Is reports whether target is ErrDisconnected and the wait ended during
// an outage of the session's connection.
func (e *WaitError) Is(target error) bool { return target == ErrDisconnected && !e.Outage.IsZero() }

// Behind says whom the acquisition waited behind, as the error's message
// does (package tier builds its own message around it): the outage if
// there was one, who held the lock, and how many nodes were ahead of ours.
func (e *WaitError) Behind() string {
	var b strings.Builder
	switch {
	case !e.Outage.IsZero():
		fmt.Fprintf(&b, "no connection to ZooKeeper since %s (%v), last seen ", e.Outage.Format("15:04:05.000"), e.ended.Sub(e.Outage).Round(time.Millisecond))
	case e.readErr != nil && e.Holder != "":
		fmt.Fprintf(&b, "holder not read as the wait ended (%v), last seen ", e.readErr)
	}
	if e.Ahead == 0 && !e.ours {
		b.WriteString("our node led as the wait ended, not yet granted by the session")
		return b.String()
	}
	b.WriteString(e.holderText())
	if e.Ahead > 0 {
		fmt.Fprintf(&b, ", %d ahead of ours", e.Ahead)
	}
	return b.String()
}

// holderText names the holder with its owner, as far as it was read.
func (e *WaitError) holderText() string {
	o := e.Owner
	switch {
	case e.ours:
		return "held by this session's node " + e.Holder
	case o != nil && o.Owner != 0:
		return fmt.Sprintf("held by %s (node %s, session 0x%x)", ParticipantID(o.Data), o.Node, o.Owner)
	case o != nil:
		return fmt.Sprintf("held by %s (node %s)", ParticipantID(o.Data), o.Node)
	case e.empty:
		return "held by nobody (the queue was empty as the wait ended)"
	case e.Holder != "":
		return "held by node " + e.Holder
	case e.readErr != nil:
		return "holder not read: " + e.readErr.Error()
	}
	return "queue not read"
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

// participantOf is the Participant of node name as a read returned it.
func participantOf(name string, data []byte, st *zk.Stat) *Participant {
	p := &Participant{Node: name, Data: data}
	if st != nil {
		p.Owner, p.Created = st.EphemeralOwner, time.UnixMilli(st.Ctime)
	}
	if f, seq, ok := ParseNode(name); ok {
		p.Family, p.Sequence = f, seq
	}
	return p
}

// queueView is what the lock's acquisitions saw of its queue, for the
// WaitError of a wait that ends: written by the acquiring goroutine (a Lock
// serves one acquisition at a time: see begin) as it waits (wait.go), read
// by it and by the goroutines that wait behind it in tier's gate
// (WaitEnded, holder.go), under mu.
//
// Our node's place and watch are of the node queued now. The holder, with
// its owner when read, is the last one seen in session seenIn, by any of
// the session's nodes or by a read: during an outage it is what the error
// says was last seen. One seen in an earlier session (our node went with
// it) says nothing of the queue now, and is never told.
type queueView struct {
	mu       sync.Mutex
	node     string       // our node queued now; "" when none
	ahead    int          // nodes ahead of node in its last listing; -1 before one
	watched  *Participant // the node ours watches, as its GetW read it; nil when none
	standing bool         // the watch on watched stands: armed, and not fired
	holder   string       // the first node, as last seen
	owner    *Participant // holder's node as read (data, session); nil when not read
	seenIn   int64        // the session holder was seen in
	reading  *holderRead  // the read of the holder in flight (readHolder)
}

// holderRead is one read of the queue and its first node.
type holderRead struct {
	done  chan struct{} // closed once the fields are written
	q     []entry       // the listing, sorted; nil when it failed or the path is gone
	first *Participant  // q's first node as read; nil when not read
	err   error
}

// ownerOf returns the session and the rendered data of node, when the
// view read it (our watched node, or the holder as read); 0 otherwise.
func (v *queueView) ownerOf(node string) (int64, string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, p := range []*Participant{v.watched, v.owner} {
		if p != nil && p.Node == node && p.Owner != 0 {
			return p.Owner, ParticipantID(p.Data)
		}
	}
	return 0, ""
}

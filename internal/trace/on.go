//go:build tierlocktrace

package trace

import (
	"fmt"
	"os"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Enabled reports whether the build records (the tierlocktrace tag).
const Enabled = true

// cur is the process's recorder, nil while recording is off.
var cur atomic.Pointer[Recorder]

func init() {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		return
	}
	r, err := Create(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tierlock:", err)
		return
	}
	cur.Store(r)
}

// Start records the process's steps into dir/trace-<pid>.jsonl from now
// on, in place of any recording under way (which it closes), and returns
// the recorder.
func Start(dir string) (*Recorder, error) {
	r, err := Create(dir)
	if err != nil {
		return nil, err
	}
	if old := cur.Swap(r); old != nil {
		_ = old.Close()
	}
	return r, nil
}

// Stop ends the recording under way, if any, and closes its file.
func Stop() error {
	if r := cur.Swap(nil); r != nil {
		return r.Close()
	}
	return nil
}

// off reports that nothing records: a record function returns before it
// computes its step.
func off() bool { return cur.Load() == nil }

func rec(c *zk.Conn, s Step) {
	if r := cur.Load(); r != nil {
		r.Record(c, s)
	}
}

// since returns t on the current recorder's clock.
func since(t time.Time) int64 {
	if r := cur.Load(); r != nil {
		return r.Since(t)
	}
	return 0
}

// GateEntered records a goroutine past the gate of the lock on path.
func GateEntered(c *zk.Conn, path string, wait bool) {
	rec(c, Step{Kind: GateEnter, Path: path, Wait: wait})
}

// HandoffRide records the gate's new holder riding node, handed over.
func HandoffRide(c *zk.Conn, path, node string) { rec(c, Step{Kind: Handoff, Path: path, Node: node}) }

// GatePassed records the gate and node passed to a local waiter, once
// passed (the receiver may have recorded any of its steps first).
func GatePassed(c *zk.Conn, path string) { rec(c, Step{Kind: GatePass, Path: path}) }

// GateLeft records the gate given back.
func GateLeft(c *zk.Conn, path string) { rec(c, Step{Kind: GateLeave, Path: path}) }

// Sent records a request handed to the connection.
func Sent(c *zk.Conn, op Op, path string) { rec(c, Step{Kind: Send, Op: op, Path: path}) }

// Answered records a request's answer: node is the node it made or
// concerns.
func Answered(c *zk.Conn, op Op, path, node string, err error) {
	if off() {
		return
	}
	rec(c, Step{Kind: Answer, Op: op, Path: path, Node: node, Out: Class(err), Note: errNote(err)})
}

// MultiAnswered records a multi's answer (the node its create made).
func MultiAnswered(c *zk.Conn, path string, res []zk.MultiResponse, err error) {
	if off() {
		return
	}
	var node string
	if len(res) > 0 && res[0].Error == nil {
		node = res[0].String
	}
	rec(c, Step{Kind: Answer, Op: OpMulti, Path: path, Node: node, N: len(res), Out: Class(err), Note: errNote(err)})
}

// Listed records a listing's answer.
func Listed(c *zk.Conn, op Op, path string, children []string, st *zk.Stat, err error) {
	if off() {
		return
	}
	s := Step{Kind: Answer, Op: op, Path: path, N: len(children), Out: Class(err), Note: errNote(err)}
	if st != nil {
		s.Pzxid = st.Pzxid
	}
	rec(c, s)
}

// Watched records a getData-with-watch's answer on node.
func Watched(c *zk.Conn, node string, st *zk.Stat, err error) {
	if off() {
		return
	}
	s := Step{Kind: Answer, Op: OpGetW, Node: node, Out: Class(err), Note: errNote(err)}
	if st != nil {
		s.Zxid = st.Czxid
	}
	rec(c, s)
}

// RetrySent records a guaranteed delete's attempt sent (bgdel's retry).
func RetrySent(c *zk.Conn, node string) {
	rec(c, Step{Kind: Send, Op: OpDelete, Node: node, Retry: true})
}

// RetryAnswered records a guaranteed delete's attempt answered.
func RetryAnswered(c *zk.Conn, node string, err error) {
	if off() {
		return
	}
	rec(c, Step{Kind: Answer, Op: OpDelete, Node: node, Retry: true, Out: Class(err), Note: errNote(err)})
}

// Turned records the waiter's reading of a listing: our node at index
// (-1: gone), leading or not.
func Turned(c *zk.Conn, node string, index int, leads bool, pzxid int64) {
	if off() {
		return
	}
	note := "wait"
	if leads {
		note = "first"
	}
	if index < 0 {
		note = "gone"
	}
	rec(c, Step{Kind: Turn, Node: node, N: index, Pzxid: pzxid, Note: note})
}

// Evented records an event from go-zookeeper.
func Evented(c *zk.Conn, ev zk.Event) {
	if off() {
		return
	}
	rec(c, Step{Kind: Event, Path: ev.Path, Note: ev.Type.String() + " " + ev.State.String(), At: int64(ev.State),
		Out: Class(ev.Err)})
}

// Renewed records the lease's deadline moved to until by a proof of
// session sid sent at sent.
func Renewed(c *zk.Conn, sid int64, sent, until time.Time) {
	rec(c, Step{Kind: Renew, Owner: sid, At: since(sent), Until: since(until)})
}

// Lapsed records the lease's lapse, ending holds holds.
func Lapsed(c *zk.Conn, holds int) { rec(c, Step{Kind: Lapse, N: holds}) }

// Judged records the session's verdict on a grant of a node of owner.
func Judged(c *zk.Conn, owner int64, verdict int) {
	if off() {
		return
	}
	note := "verdict?"
	if verdict >= 0 && verdict < len(Verdicts) {
		note = Verdicts[verdict]
	}
	rec(c, Step{Kind: Grant, Owner: owner, Note: note})
}

// Granted records the outcome of an acquisition's grant: node granted
// with token, or err.
func Granted(c *zk.Conn, path, node string, owner, token int64, err error) {
	if off() {
		return
	}
	rec(c, Step{Kind: Grant, Path: path, Node: node, Owner: owner, Zxid: token, Out: Class(err), Note: errNote(err)})
}

// Lost records a hold's loss told, with its cause.
func Lost(c *zk.Conn, node string, cause error) {
	if off() {
		return
	}
	rec(c, Step{Kind: Lose, Node: node, Out: Class(cause), Note: errNote(cause)})
}

// Released records a hold released.
func Released(c *zk.Conn, path, node string) { rec(c, Step{Kind: Release, Path: path, Node: node}) }

// DelAdded records a delete queued.
func DelAdded(c *zk.Conn, path, node string) { rec(c, Step{Kind: DelAdd, Path: path, Node: node}) }

// DelTaken records a pending delete taken by a create.
func DelTaken(c *zk.Conn, path, node string) { rec(c, Step{Kind: DelTake, Path: path, Node: node}) }

// DelFlushed records a pending delete taken by the flusher.
func DelFlushed(c *zk.Conn, path, node string) { rec(c, Step{Kind: DelFlush, Path: path, Node: node}) }

// SessionOpened records a session made on c, with its loss policy: the
// first step of c, so that a replay knows the policy before any other.
// wire, unless nil (a nil pointer too), is the wire c was dialed through
// (zklock's tap): its steps, recorded from the dial on, are c's.
func SessionOpened(c *zk.Conn, wire any, expiryOnly bool) {
	r := cur.Load()
	if r == nil {
		return
	}
	if v := reflect.ValueOf(wire); wire != nil && (v.Kind() != reflect.Pointer || !v.IsNil()) {
		r.Bind(c, wire)
	}
	note := PolicyDefault
	if expiryOnly {
		note = PolicyExpiryOnly
	}
	r.Record(c, Step{Kind: SessionOpen, Note: note})
}

// Wrote records a write to the connection of wire, begun at start (At):
// a request with opcode op (a ping, a connect request: whatever the
// client writes).
func Wrote(wire any, op int32, start time.Time) {
	if r := cur.Load(); r != nil {
		r.RecordWire(wire, Step{Kind: Write, N: int(op), At: r.Since(start)})
	}
}

// Handshook records the server's connect response, read on wire: the
// session it granted and the session timeout, in ms (0 for none: the
// session expired).
func Handshook(wire any, sid int64, timeoutMs int32) {
	if r := cur.Load(); r != nil {
		r.RecordWire(wire, Step{Kind: Handshake, Owner: sid, Timeout: int64(timeoutMs) * int64(time.Millisecond),
			Note: HandshakeWire})
	}
}

// ConnHandshook records, for a connection whose bytes are not tapped
// (zklock.NewSession), the session sid and the timeout d the server
// granted, as go-zookeeper read them from its connect response.
func ConnHandshook(c *zk.Conn, sid int64, d time.Duration) {
	rec(c, Step{Kind: Handshake, Owner: sid, Timeout: int64(d), Note: HandshakeConn})
}

// Paused records that this process stopped process pid (SIGSTOP) no
// earlier than from and let it go on (SIGCONT) no earlier than to.
func Paused(pid int, from, to time.Time) {
	rec(nil, Step{Kind: Pause, N: pid, At: since(from), Until: since(to)})
}

// DeletesSent records the flusher's multi of delete requests ops (the
// *zk.DeleteRequest values it sends), naming every node: a replay must
// know each of them is on the wire, not only the first.
func DeletesSent(c *zk.Conn, ops []any) {
	if off() {
		return
	}
	s := Step{Kind: Send, Op: OpMulti, Nodes: make([]string, 0, len(ops))}
	for _, op := range ops {
		if d, ok := op.(*zk.DeleteRequest); ok {
			s.Nodes = append(s.Nodes, d.Path)
		}
	}
	if len(s.Nodes) > 0 {
		s.Path = s.Nodes[0]
	}
	rec(c, s)
}

// WritesSent records a request of the session's writer: a create alone
// (send CRE on its prefix), a delete alone (send DEL on its node), or a
// multi naming every node it creates, deletes and checks (send MULTI;
// send TXN when it is one guarded transaction alone).
func WritesSent(c *zk.Conn, ops []any) {
	if off() {
		return
	}
	s := Step{Kind: Send, Op: OpMulti}
	for _, op := range ops {
		switch o := op.(type) {
		case *zk.CreateRequest:
			s.Creates = append(s.Creates, o.Path)
		case *zk.DeleteRequest:
			s.Nodes = append(s.Nodes, o.Path)
		case *zk.CheckVersionRequest:
			s.Txns = append(s.Txns, o.Path)
		}
	}
	s.Path, s.Op = writesHead(ops)
	if len(ops) == 1 {
		s.Creates, s.Nodes = nil, nil // alone: Path says it
	}
	rec(c, s)
}

// writesHead is the path and op a writer's request is recorded by.
func writesHead(ops []any) (string, Op) {
	if len(ops) == 0 {
		return "", OpMulti
	}
	switch o := ops[0].(type) {
	case *zk.CreateRequest:
		if len(ops) == 1 {
			return o.Path, OpCreate
		}
		return o.Path, OpMulti
	case *zk.DeleteRequest:
		if len(ops) == 1 {
			return o.Path, OpDelete
		}
		return o.Path, OpMulti
	case *zk.CheckVersionRequest:
		for _, op := range ops[1:] {
			if _, check := op.(*zk.CheckVersionRequest); check {
				return o.Path, OpMulti // more than one transaction
			}
		}
		return o.Path, OpTxn
	}
	return "", OpMulti
}

// WritesAnswered records the answer to a request of the session's writer:
// the nodes its creates made, and the op that failed it (-1: none, or
// not known).
func WritesAnswered(c *zk.Conn, res []zk.MultiResponse, err error) {
	if off() {
		return
	}
	s := Step{Kind: Answer, Op: OpMulti, N: -1, Out: Class(err), Note: errNote(err)}
	for i, r := range res {
		if r.Error != nil && s.N < 0 {
			s.N = i
		}
		if r.String != "" {
			s.Creates = append(s.Creates, r.String)
		}
	}
	rec(c, s)
}

func errNote(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

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

// Renewed records the lease's deadline of session sid moved to until,
// counted from a touch of the session at the leader after touched (the
// write time of a chain's touch, or of a handshake's connect request).
func Renewed(c *zk.Conn, sid int64, touched, until time.Time) {
	rec(c, Step{Kind: Renew, Owner: sid, At: since(touched), Until: since(until)})
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

// DelAdded records the delete of node, on the lock at path, queued for
// the session's writer; owner is the session the code holds the node was
// made in (the writer drops the delete unsent when that session is over).
func DelAdded(c *zk.Conn, path, node string, owner int64) {
	rec(c, Step{Kind: DelAdd, Path: path, Node: node, Owner: owner})
}

// SessionOpened records a session made on c, with its loss policy and
// the servers' tickTime it was told (0: none): the first step of c, so
// that a replay knows them before any other. wire, unless nil (a nil
// pointer too), is the wire c was dialed through (zklock's tap): its
// steps, recorded from the dial on, are c's.
func SessionOpened(c *zk.Conn, wire any, expiryOnly bool, tick time.Duration) {
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
	r.Record(c, Step{Kind: SessionOpen, Note: note, Tick: int64(tick)})
}

// Wrote records a write to the connection of wire, begun at start (At):
// a request with opcode op (a ping, a connect request: whatever the
// client writes). key (Path) is the key of the tap's waiter the write
// tells ("" none): a proof with a waiter is dated by the write that tells
// it (its own), the others by the first write after their queueing.
func Wrote(wire any, op int32, start time.Time, key string) {
	if r := cur.Load(); r != nil {
		r.RecordWire(wire, Step{Kind: Write, N: int(op), At: r.Since(start), Path: key})
	}
}

// Handshook records the server's connect response, read on wire: the
// session it granted and the session timeout, in ms (0 for none: the
// session expired), to the connect request written at written.
func Handshook(wire any, sid int64, timeoutMs int32, written time.Time) {
	if r := cur.Load(); r != nil {
		r.RecordWire(wire, Step{Kind: Handshake, Owner: sid, Timeout: int64(timeoutMs) * int64(time.Millisecond),
			At: r.Since(written), Note: HandshakeWire})
	}
}

// Touched records a touch the tap of wire confirmed: a reply read at
// confirmed showed the server touched the session for the packet written
// at written.
func Touched(wire any, written, confirmed time.Time) {
	if r := cur.Load(); r != nil {
		r.RecordWire(wire, Step{Kind: Touch, At: r.Since(written), Until: r.Since(confirmed)})
	}
}

// ConnHandshook records, for a connection whose bytes are not tapped
// (zklock.NewSession), the session sid and the timeout d the server
// granted, as go-zookeeper read them from its connect response.
func ConnHandshook(c *zk.Conn, sid int64, d time.Duration) {
	rec(c, Step{Kind: Handshake, Owner: sid, Timeout: int64(d), Note: HandshakeConn})
}

// TickProbed records, on c's session, a probe's connect answer from a
// server: the least session timeout it grants, least.
func TickProbed(c *zk.Conn, least time.Duration) {
	rec(c, Step{Kind: Handshake, Timeout: int64(least), Note: HandshakeProbe})
}

// Paused records that this process stopped process pid (SIGSTOP) no
// earlier than from and let it go on (SIGCONT) no earlier than to.
func Paused(pid int, from, to time.Time) {
	rec(nil, Step{Kind: Pause, N: pid, At: since(from), Until: since(to)})
}

// WritesSent records a request of the session's writer: n writes, write
// i a transaction (Hold.Txn, Session.Txn) when txn and its ops ops (a
// create's or a delete's one op; a transaction's, a hold's check of its
// node first), as writeOf(i) says, named in Writes in their order. The
// request's Op and Path are its one write's when it is alone (CRE on the
// prefix, DEL on the node, TXN on its first op's path), else MULTI on the
// first write's path.
func WritesSent(c *zk.Conn, n int, writeOf func(i int) (txn bool, ops []any)) {
	if off() || n == 0 {
		return
	}
	s := Step{Kind: Send, Writes: make([]BatchWrite, n)}
	for i := range n {
		s.Writes[i] = batchWrite(writeOf(i))
	}
	s.Op, s.Path = requestOf(s.Writes)
	rec(c, s)
}

// WritesAnswered records the answer to the request WritesSent recorded
// with the same n and writeOf: res the results per op (none when the
// server's answer did not come), err its error. N is the write whose op
// failed the multi (the first op with an error: ZooKeeper reports those
// before it OK and those after it as not run), -1 when none did or when
// there are no results to say; Creates the nodes the creates made.
func WritesAnswered(c *zk.Conn, n int, writeOf func(i int) (txn bool, ops []any), res []zk.MultiResponse, err error) {
	if off() || n == 0 {
		return
	}
	s := Step{Kind: Answer, N: -1, Out: Class(err), Note: errNote(err)}
	ws := make([]BatchWrite, n)
	at := 0
	for i := range n {
		txn, ops := writeOf(i)
		ws[i] = batchWrite(txn, ops)
		for k := at; k < at+len(ops) && k < len(res); k++ {
			if res[k].Error != nil && s.N < 0 {
				s.N = i
			}
		}
		if ws[i].Op == OpCreate && at < len(res) && res[at].Error == nil && res[at].String != "" {
			s.Creates = append(s.Creates, res[at].String)
		}
		at += len(ops)
	}
	s.Op, s.Path = requestOf(ws)
	rec(c, s)
}

// batchWrite names a write of the session's writer: a transaction by its
// first op's path, a create or a delete (one op) by its own.
func batchWrite(txn bool, ops []any) BatchWrite {
	if len(ops) == 0 {
		return BatchWrite{Op: "?"}
	}
	switch o := ops[0].(type) {
	case *zk.CreateRequest:
		if !txn {
			return BatchWrite{Op: OpCreate, Path: o.Path}
		}
		return BatchWrite{Op: OpTxn, Path: o.Path}
	case *zk.DeleteRequest:
		if !txn {
			return BatchWrite{Op: OpDelete, Path: o.Path}
		}
		return BatchWrite{Op: OpTxn, Path: o.Path}
	case *zk.CheckVersionRequest:
		return BatchWrite{Op: OpTxn, Path: o.Path}
	case *zk.SetDataRequest:
		return BatchWrite{Op: OpTxn, Path: o.Path}
	}
	return BatchWrite{Op: "?"}
}

// requestOf is the op and path a request of the writer is recorded by.
func requestOf(ws []BatchWrite) (Op, string) {
	if len(ws) == 1 {
		return ws[0].Op, ws[0].Path
	}
	return OpMulti, ws[0].Path
}

func errNote(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

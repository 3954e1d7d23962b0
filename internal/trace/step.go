package trace

import "encoding/json"

// Kind is a step's kind, named after the twotier.pml step it stands for
// (see the package doc for the mapping).
type Kind uint8

// The step kinds.
const (
	KindNone Kind = iota
	// GateEnter: a goroutine is past the gate (goroutine: "gate enter").
	GateEnter
	// Handoff: the gate's new holder rides the node it was handed
	// (goroutine: "zkHeld[p] && !hlost[p] -> handoffs[p]++; become(1)").
	Handoff
	// GatePass: the releasing holder passes gate and node to a local
	// waiter (goroutine holding: "bounded local hand-off").
	GatePass
	// GateLeave: the gate is given back (goroutine: "gate[p] = 0").
	GateLeave
	// Send: a request handed to the connection (session wire: "wire[p]!op").
	Send
	// Answer: a request's answer read by its caller (rc, rl, rw; or ERR).
	Answer
	// Turn: the waiter's reading of a listing (wait: FIRST, a
	// predecessor, or GONE).
	Turn
	// Event: an event from go-zookeeper: a watch event (wev[p]) or a
	// session state (conn, disconnect, expire, reconnect).
	Event
	// Renew: a proof moved the lease's deadline (proved(p): lease[p] = 1).
	Renew
	// Lapse: the lease's deadline passed with holds (lapse(p)).
	Lapse
	// Grant: the session's verdict on a node that leads (lead: grantNow,
	// grantGone, or a wait).
	Grant
	// Lose: a hold's loss told (losehold).
	Lose
	// Release: a hold released (holding: "Release: the delete is not
	// awaited").
	Release
	// DelAdd: a released (or lost, or abandoned) node's delete queued for
	// the session's writer (writes.Queue.Delete; the model's queueDelete);
	// Owner the session the code holds its node was made in.
	DelAdd
	// DelTake: a pending delete taken by a create (the model's
	// takePending, stale[p]). The code records none since the session's
	// writer (main 54c8475) replaced the take: the model's step, which
	// twotier.pml's -DEMIT traces still print.
	DelTake
	// DelFlush: a pending delete taken by the flusher (the model's
	// "pend[p] != NONE -> wire[p]!DEL"); like DelTake, the model's only.
	DelFlush
	// SessionOpen: a session object made (Connect, NewSession), recorded
	// once, before any other step of its connection; Note its loss policy
	// (PolicyDefault, PolicyExpiryOnly), Tick the servers' tickTime it was
	// told (zklock.WithServerTickTime; 0: none).
	SessionOpen
	// Write: a request (or a ping, a connect request) written to the
	// session's connection, recorded at the wire: At when the write began,
	// N its opcode. Not a step of the model: what the replay dates proofs
	// by.
	Write
	// Handshake: the server's answer to a connect request: Owner the
	// session it granted, Timeout the session timeout it granted (ns), At
	// when the connect request was written (read at the wire only: Note
	// HandshakeWire). Not a step of the model: what the replay derives the
	// lease's bounds from.
	Handshake
	// Pause: this process stopped process N (SIGSTOP) at At and let it go
	// on (SIGCONT) at Until, on this file's clock: a step of the
	// environment, outside the model, which excuses the stopped process's
	// lateness.
	Pause
	// Touch: a reply read on a tapped connection (or its connect answer)
	// showed that the server touched the session for a packet written at
	// At, by Until, when the reply was read: recorded as the tap confirms
	// it (wire.Touches). Not a step of the model: what the replay derives
	// a chain's touch from (the lease's argument, lease.go).
	Touch
	kindCount
)

var kindNames = [kindCount]string{"", "gate_enter", "handoff", "gate_pass", "gate_leave",
	"send", "answer", "turn", "event", "renew", "lapse", "grant", "lose", "release",
	"del_add", "del_take", "del_flush", "session", "write", "handshake", "pause", "touch"}

// String returns the kind's name, as the trace file spells it.
func (k Kind) String() string {
	if k < kindCount {
		return kindNames[k]
	}
	return "kind?"
}

// MarshalText writes the kind's name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind's name.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if n == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	*k = KindNone
	return nil
}

// Op is a request's kind, as twotier.pml's mtype names it (plus the ones
// the model folds into its steps).
type Op string

// The requests.
const (
	OpCreate    Op = "CRE"   // create of our node
	OpMulti     Op = "MULTI" // the session's writer's request of several writes (the model's: a create carrying a pending delete)
	OpDelete    Op = "DEL"   // a released node's delete (the writer's; Step.Retry: a guaranteed retry)
	OpList      Op = "LIST"  // getChildren of the lock path
	OpGetW      Op = "GETW"  // getData with a watch on the predecessor
	OpChildrenW Op = "LISTW" // getChildren with a watch (a rule that watches the queue)
	OpSync      Op = "SYNC"  // the lease's sync (lease.refresh)
	OpTxn       Op = "TXN"   // a hold's guarded transaction (Hold.Txn, through the writer): a write that proves the session
)

// Step is one recorded step. Times are nanoseconds since the recorder
// started (monotonic); Seq orders the steps of one file.
type Step struct {
	Seq   uint64 `json:"seq"`
	T     int64  `json:"t"`
	Wall  int64  `json:"wall,omitempty"` // first step only: the wall clock (Unix ns) at T = 0
	Pid   int    `json:"pid"`
	Proc  int    `json:"proc"`          // the session object (the model's p), numbered in order of first sight
	Sid   int64  `json:"sid,omitempty"` // the ZooKeeper session id at the step (the model's sid[p], by value)
	Kind  Kind   `json:"kind"`
	Op    Op     `json:"op,omitempty"`
	Path  string `json:"path,omitempty"` // the lock path, or the request's path
	Node  string `json:"node,omitempty"` // the node concerned (ours, the predecessor, the deleted one)
	Out   string `json:"out,omitempty"`  // outcome: ok, or an error class (see Class)
	Zxid  int64  `json:"zxid,omitempty"` // a node's czxid (GETW) or the fencing token (grant)
	Pzxid int64  `json:"pzxid,omitempty"`
	N     int    `json:"n,omitempty"`     // listing: children; turn: our index (-1 gone); lapse: holds ended
	Owner int64  `json:"owner,omitempty"` // the session that owns Node (grant; renew, handshake: the session)
	// At: renew, the write time of the touch it counts from; handshake,
	// the connect request's write; touch, the packet's write; event, the
	// state; pause, the stop.
	At int64 `json:"at,omitempty"`
	// Until: renew, the new deadline (ns, same clock as T); touch, when
	// the reply that confirmed it was read; pause, the end.
	Until int64 `json:"until,omitempty"`
	// Timeout is the session timeout the server granted (handshake, ns).
	Timeout int64 `json:"timeout,omitempty"`
	// Tick is the servers' tickTime the session was told (session, ns; 0:
	// none, and the lease takes it as half the granted timeout).
	Tick  int64  `json:"tick,omitempty"`
	Retry bool   `json:"retry,omitempty"` // a deleteGuaranteed attempt (the model's bgdel)
	Wait  bool   `json:"wait,omitempty"`  // gate_enter: a waiting acquisition (not a try)
	Note  string `json:"note,omitempty"`  // event type, state, verdict, loss cause, session policy
	// Writes are the writes of a request of the session's writer (send),
	// in the order of their ops: every one, also when it is alone. Op and
	// Path are the request's: CRE, DEL or TXN and the write's path when it
	// is alone, else MULTI and the first write's path; its answer has the
	// same Op and Path, N the index (in Writes) of the write whose op
	// failed the multi (-1: none, or the outcome of every write unknown),
	// and Creates the nodes its creates made, in their order in Writes
	// (none when nothing was applied).
	Writes  []BatchWrite `json:"writes,omitempty"`
	Creates []string     `json:"creates,omitempty"`
	// Nodes are the nodes the flusher's multi deleted (send MULTI), as the
	// code recorded it before the session's writer replaced the flusher
	// (main 54c8475): the replay still reads such traces.
	Nodes []string `json:"nodes,omitempty"`
}

// BatchWrite is one write of a request of the session's writer: Op CRE, Path
// the prefix of the node it creates; DEL, the node it deletes (a released,
// lost or abandoned node of ours); TXN, a transaction's first op's path
// (Hold.Txn's: the hold's node its guard checks; Session.Txn's: the
// caller's first op), its other ops not named.
type BatchWrite struct {
	Op   Op     `json:"op"`
	Path string `json:"path"`
}

// Where a handshake step read the server's answer.
const (
	// HandshakeWire: from the connect response's bytes, by the wire tap
	// (zklock.Connect): the session also records every write.
	HandshakeWire = "wire"
	// HandshakeConn: from go-zookeeper's connection once it had read the
	// response (zklock.NewSession): no write is recorded.
	HandshakeConn = "conn"
	// HandshakeProbe: a probe's connect answer (no session of the
	// trace's): the least session timeout the server grants, Timeout,
	// which bounds its tick by half (zklock's tick probe).
	HandshakeProbe = "probe"
)

// The loss policies a session step names (zklock.WithLossOnExpiryOnly).
const (
	// PolicyDefault: a disconnection, a lapse of the lease (its reach R =
	// 7T/8) or a new session ends every hold; twotier.pml's policy.
	PolicyDefault = "default"
	// PolicyExpiryOnly: holds survive disconnections; a lapse (R = 9T/8),
	// an expiry or a new session ends them. Not in twotier.pml.
	PolicyExpiryOnly = "expiry-only"
)

// String returns the step as its JSON line (without the newline).
func (s Step) String() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Verdicts names zklock's grant verdicts (Session.grantableLocked), in
// the order of its constants.
var Verdicts = [...]string{"now", "closed", "gone", "lag", "down", "lease"}

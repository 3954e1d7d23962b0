// Package trace records, per process, the steps of tierlock's protocol
// that the Promela models speak of, so that a run (a test, a nemesis
// test, a stress cell) can later be replayed against model/twotier.pml.
//
// # Turning it on
//
// Recording is compiled in only with the tierlocktrace build tag:
//
//	go test -tags tierlocktrace ./zklock/ ./tier/
//	go build -C stress -tags tierlocktrace .
//
// In such a build, a process started with TIERLOCK_TRACE=dir writes its
// steps to dir/trace-<pid>.jsonl from its start (every process of a stress
// cell or a multi-process nemesis test writes its own file; one that takes
// no step, stress's coordinator, leaves an empty one); Start and Stop begin
// and end a recording explicitly (the tests do).
//
// Without the tag, Enabled is false and every record function is an empty
// function that the compiler inlines to nothing: a normal build calls
// none of them, allocates nothing, and links no code of this package
// (`go tool nm` of a stress or zklock test binary lists no symbol of it).
// What stays is the evaluation of arguments Go cannot drop, a nil check on
// a field load at a few call sites. The calls at two places that would
// leave more (an atomic load; a closure copied where its function is
// inlined, whose calls are then not inlined) are guarded by
// `if trace.Enabled`, a constant.
//
// # File format
//
// One JSON object a line, a Step, written and flushed as recorded, in the
// order recorded (Seq): a process killed mid-run leaves every step it took.
// T is nanoseconds since the recording began (monotonic); the first step
// carries Wall, the wall clock at T = 0, for merging the files of several
// processes. Proc numbers the session objects (*zk.Conn) of the process in
// order of first sight: it is the model's process p. Sid is the ZooKeeper
// session id when the step was recorded: it changes after an expiry, as
// the model's sid[p] flips. Read and ReadFile read a file back.
//
// # Step kinds and twotier.pml
//
// Kinds are named after the model's steps; the model's names are in
// quotes. Per goroutine (proctype goroutine), in tier.Lock and zklock.Lock:
//
//   - gate_enter: "gate enter", the admission past the gate (tier's
//     Lock.enter; Wait false for a TryAcquire, which the model leaves out).
//   - handoff: "zkHeld[p] && !hlost[p] -> handoffs[p]++; become(1)", the
//     gate's holder riding the node it was handed (takeNode).
//   - del_take: the acquisition's takePending, "stale[p] = pend[p]": the
//     model's only (twotier.pml's -DEMIT traces); the code, whose creates
//     go through the session's writer (below), records none.
//   - send, op CRE or MULTI: "wire[p]!CRE,0,guid[p]" or
//     "wire[p]!MULTI,stale[p],guid[p]" (the code's create is a write of
//     the session's writer: below); op LIST: "wire[p]!LIST,0,guid[p]",
//     pipelined behind the create, in list:, or protection mode's listing
//     (create: with mayExist); op GETW: "wire[p]!GETW,x,0". A send is
//     recorded as the request is handed to go-zookeeper, before it is on
//     the wire; a pipelined listing's send after its create is on the wire.
//   - answer: the caller reading rc[p] (CRE, MULTI: Node is our node, Out
//     "" for OK, "conn" for ERR, "nonode" for NONODE; a create's nonode is
//     the lock path missing, made (untraced) before the create is sent
//     again, which the model leaves out), rl[p] (LIST: N
//     children, Pzxid) or rw[p] (GETW: OK, NONODE, ERR); for a write
//     that proved the session a renew step follows ("proved(p)").
//   - turn: the branch on the listing in wait:, "x == FIRST -> goto lead"
//     (Note first, N 0), "x < MAXN -> goto watchpred" (Note wait, N our
//     index), "x == GONE -> ... goto acquire" (Note gone, N -1). The fencing
//     token is the Pzxid of the listing that found us first.
//   - event (a watch event, Path the watched node): "wev[p] -> wev[p] = 0;
//     goto list".
//   - grant, Note the verdict (Session.grant, each look): now is
//     "grantNow", gone "grantGone"; down, lease and lag are the waits for
//     the connection or the renewer's sync (the model's guards, false).
//     Then grant with Node and Zxid (the token) once the acquisition's grant
//     returned: Out "" is become(0), the hold valid; "ctx" the cancelled
//     wait ("cancels < C").
//   - release: holding's "queueDelete(p, znode[p]) /* Release */", the
//     hold's Release (or dropZK: "zkHeld[p] && hlost[p]").
//   - del_add: queueDelete, "pend[p] = n" (a release, a cancelled wait, a
//     lost hold's node): the delete queued for the session's writer, Owner
//     the session the code holds the node was made in.
//   - gate_pass: the bounded local hand-off, "gate[p] = k + 1", recorded
//     by the giver once it is done, so the receiver may have recorded any of
//     its steps first; the receiver's gate_enter followed by its handoff is
//     what places the pass (just before that gate_enter).
//   - gate_leave: "gate[p] = 0", at the end of holding or of a failed wait.
//
// Per session (proctype session):
//
//   - session: the session object made (Session.start, under Connect or
//     NewSession), recorded before any other step of its connection; Note
//     its loss policy, "default" (twotier.pml's) or "expiry-only"
//     (zklock.WithLossOnExpiryOnly, which the model does not have); Tick
//     the servers' tickTime it was told (zklock.WithServerTickTime; 0:
//     none).
//   - send and answer of the session's writer (zklock's write path, package writes: every
//     create, released node's delete and guarded transaction waiting, in
//     one FIFO, a batch from its head per request, one request out at a
//     time; after a refused batch, its other writes each alone, side by
//     side): the send's Writes name the request's writes in order (CRE and
//     the prefix: the acquisition's "wire[p]!CRE,0,guid[p]"; DEL and the
//     node: "wire[p]!DEL,n,1", the model's pend sent; TXN and its first
//     op's path: a hold's guarded transaction, its check of the hold's
//     node first, or the session's own, Session.Txn), its Op and Path are the one write's when it is alone, else
//     MULTI and the first write's path; the answer has the same Op and
//     Path, N the write whose op failed the multi (-1: none, or no result
//     per op: every write's outcome unknown, the model's ERR), Creates the
//     nodes made, in order; a renew follows an answer with no error. The
//     model's del_flush and its DEL (the flusher, which the writer
//     replaced) are the model's only.
//   - send and answer op DEL with Retry: "bgdel[p] != 0 -> wire[p]!DEL,n,0",
//     deleteGuaranteed's attempts, which renew nothing.
//   - send and answer op SYNC: the sync step of lease.refresh, then renew.
//   - a TXN write (the hold's node): a hold's guarded transaction, a write
//     the model folds into "a write of the session that succeeded".
//   - renew: "lease[p] = 1": the lease's deadline moved by a handshake
//     or by a proof closing a chain (zklock/internal/session/lease.go): At
//     the write time of the touch at the leader it counts from (the chain's
//     touch, or the handshake's connect request), Until the new deadline
//     (the lease is "ahead" while T < Until), Owner the session; both the
//     code's, which the replay checks against the rule it derives. A
//     renewal that moves nothing is not recorded.
//   - lapse: "lapse(p)", the deadline passed; N holds ended with it (0: the
//     lease lapsed with no hold, as the model's lapse may).
//   - lose: losehold, one step per hold told ("hlost[q] = 1"), Note the
//     cause: the connection lost (disconnect), the session expired or
//     replaced, the lease expired (after a lapse), the node deleted.
//   - event with a session state (Note "EventSession StateDisconnected",
//     ...): the client seeing disconnect(p); StateHasSession again, the
//     reconnection, in the same session (same Sid) or a new one after
//     expire(p) (a new Sid: "sid[p] = 1 - sid[p]; lease[p] = 0").
//
// What the server said and the wire did, which the model has no step for
// and the replay derives the lease's bounds from (docs/replay.md):
//
//   - handshake: the server's answer to a connect request, Owner the
//     session it granted, Timeout the session timeout it granted (ns):
//     read from the answer's bytes by zklock's wire tap (Note "wire",
//     zklock.Connect; At when the connect request was written), or from
//     go-zookeeper's connection once it has read them (Note "conn",
//     zklock.NewSession, for each new session);
//   - touch: a reply read on a tapped connection, or its connect answer,
//     showing the server touched the session for the packet written at At
//     (the reply's own request, or an earlier one: every reply, pings'
//     included, confirms the packets before it; AddAuth's and watch events
//     confirm none), Until when the reply was read: recorded as the tap
//     confirms it (zklock/internal/wire's Touches);
//   - write: each write on a tapped connection (requests, pings, the
//     connect request), At when it began, as the tap dates it, N its
//     opcode. The tap's steps are recorded under the process of its
//     connection (SessionOpened binds the two), also those it records
//     before Connect returns;
//   - pause: a process stopped (SIGSTOP) by this one, N its pid, from At
//     to Until on this file's clock (stress's pause fault): the
//     environment's step, which excuses the stopped process's lateness.
//
// Not in a client's trace: the leader's steps (apply, serve, expire, the
// cut), which a replay infers from the answers (a create's answer names the
// node, whose sequence number is its order of creation) or reads from the
// servers; and steps the model has no transition for: a children watch
// (op LISTW, a semaphore's lease node waiting: its answer is a listing),
// the own-node watch of a long hold, participants' reads.
package trace

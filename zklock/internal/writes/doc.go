// Package writes is a ZooKeeper session's write path: every write the
// session's locks have waiting (an acquisition's create, the delete of a
// released or abandoned node, a transaction) is queued here, and one
// writer goroutine sends what waits as one request (a multi, which the
// server applies as one proposal, one log append and one commit), settles
// each write by the answer, and sends the next. A quiet session sends each
// write as it comes; a busy one few large multis, one round trip apart.
//
// # What the session gives it (Conn)
//
// The connection's state (Connected waits for a connection with a session;
// SessionID), the sending of a round's requests and their answers (Send,
// which calls Request.Written when it sees a request on the wire, or
// Request.Handing as it hands one to a connection it cannot see), and the
// session's bookkeeping: the places its bound on requests in flight lent to creates (Ended), the
// guaranteed delete of a node the server would not let go (DeleteApart), a
// trace point (Queued), goroutines the session tracks (Go), and a clock
// (Now, AfterFunc). Nothing else crosses: the package imports nothing of
// zklock, and its explorer (explore_test.go) drives it through this
// contract alone.
//
// # What it gives
//
// Create, Delete and Txn queue a write; GiveUp and Await are what a caller
// does when it stops waiting; Stop closes the queue with the session. A
// create or a transaction is a *Write: Sent is closed once its request is
// on the wire (or it is over), Handed with it or once it is handed to a
// connection whose wire is not seen (a hint, for a read that may go behind
// it: never for what the rules below need), Done once it is over, and its Result then
// says how it ended (Applied, Refused at its own op, Unknown, Withdrawn,
// Closed, TooLarge). A delete is nobody's to wait for: it is retried whatever it
// meets until its node or its session is gone.
//
// # The rules
//
//   - Order. The queue's order is the order of the writes on the wire, and
//     so at the server, which applies one session's requests in the order
//     they arrive, a multi's ops in order: a create queued after its path's
//     released node's delete goes in the same request after it, or in a
//     later one, so that the session never has two nodes on a path. A lone
//     delete lingers Config.FoldWait so that a create can carry it.
//   - A request is never larger than Config.MaxBytes, counted as
//     go-zookeeper encodes it, each path as the server reads it (a
//     chroot's bytes before it: Config.PathLen; size.go): a batch takes
//     writes while they fit, and a create or a transaction larger alone
//     ends at once, TooLarge, unsent, rather than failing everyone's
//     batch.
//   - A write fails only for its own op. A multi refused at one op fails
//     the write of that op alone, with what it would have met on its own;
//     the others were not applied and go again at the head of the queue,
//     together, in the next request. A write refused twice for another's
//     op goes apart, each alone, at most Config.MaxApart requests a round
//     and one per path (a second write of a path waits for the next round),
//     so that many failing writes (a cold burst on new lock paths) fail in
//     a few round trips, not one after another nor all at once.
//   - An answer with no result per op (the connection lost with the
//     request out) leaves each write's outcome unknown: a create's caller
//     looks for its node by GUID (protection mode), a delete goes again at
//     the head until its node or its session is gone, a transaction ends
//     Unknown and is never sent again.
//   - What a caller is told is true. A caller that stops waiting (GiveUp)
//     takes its write back while it is not yet sealed into a request (it
//     is then never applied: queued, or back in the queue after a refused
//     batch). A sealed write is the writer's: never sent again, whatever
//     its batch meets; the node a create made is deleted, or looked for by
//     GUID. Await tells a caller Unknown only once the request is on the
//     wire, so that what the caller sends next (a read-back) is answered
//     after it.
//
// The properties these rules keep are checked three ways: model/writes.pml
// (spin), the explorer here (every schedule of a few callers, faults and
// ctx ends, against an in-memory ZooKeeper, memzk, that a conformance test
// holds against a real server), and internal/replay, which replays traces
// of real runs.
package writes

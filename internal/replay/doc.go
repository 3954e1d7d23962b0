// Package replay checks recorded traces (package internal/trace) against
// model/twotier.pml: each recorded step must be a step the model can take
// from the state the earlier steps led to. A step it cannot take is a
// Violation naming the step (file, Seq, kind), the process (Pid, Proc)
// and the model's state before it.
//
// # An executable rendering of twotier.pml's client steps
//
// Traces are far too large for spin (a 10-minute stress run writes
// millions of steps), so the replay is the model's client side written in
// Go: one state machine per recorded process (a file's Pid and Proc: the
// model's p, proctype session's variables as the client knows them) and,
// in it, one per lock path (proctype goroutine's: the gate, the
// acquisition, the hold). Each transition's doc comment quotes the .pml
// line it renders. What the client does not see, the leader's steps and a
// cut, is inferred from the answers: a create's answer names our node (its
// sequence number is its order of creation) and the session it was applied
// in (the one current at both its send and its answer); a listing's answer
// is what a turn reads; a cut server is invisible, so a lapse needs only
// the lease. The model's G goroutines are interchangeable and only the
// gate's holder acts on its lock, so a recorded step needs no goroutine
// id: the gate's order says whose it is, the create's prefix (its GUID)
// and then the node name which acquisition.
//
// Across processes, on the clock merged from each file's Wall and T, the
// replay checks what the model asserts of all of them: at most one valid
// hold per path at a time (a hold is valid from its grant until its
// release, its loss, the lapse, disconnection or new session that ended
// it, or its lease's deadline passing unrenewed), and fencing tokens
// increasing from one hold to the next; and the leader's order the
// answers imply: a create sent after another's answer came makes a
// greater sequence number.
//
// Where the code takes steps the model abstracts, the rendering accepts
// them as the model's: a lapse while linked to the leader (left out of
// the model; it only ends holds early); a re-check listing while the
// watch stands (the model lists again only once the watch is gone: a
// reduction, the listing finds the same predecessor); a node found gone
// queued for deletion anyway; TryAcquire as a wait that ends at once.
//
// # The session's writer
//
// The code sends every write a session has waiting (creates of any path,
// released nodes' deletes, guarded transactions) through one FIFO and one
// writer, a batch from its head per request, one request out at a time
// (after a refused batch, the writes it puts back go again together, and
// once refused twice each alone, side by side, at most one per lock path;
// zklock/internal/writes). Each request is one send step naming its
// writes in order (trace.Step.Writes), and its answer one step saying what
// was applied: all (the nodes its creates made, in order), nothing but
// the settling of the write whose op failed the multi (the others queued
// again, to go in a later request), or nothing known. The replay applies a
// request's writes in order (writer.go) and checks model/writes.pml's
// property (a), one node per path, in the writer's terms: a Lock's create is never
// in a request while its released node's delete is still queued, nor ahead
// of that delete in the same multi, nor while it is in another request
// unanswered; a delete a request takes is queued (not
// settled, not in a request out, not left to the guaranteed retry); a
// create is not sent again while its request is out; an answer names only
// writes of its request. A queued delete of an ended session's node is
// dropped unsent, as the writer drops it. twotier.pml's own steps (a
// create taking a pending delete, del_take, or the flusher, del_flush), in
// its -DEMIT traces and in runs recorded before the writer, replay by the
// rendering in wire.go.
//
// # Bounds derived from the server and the model, not from the code
//
// Every bound the replay applies comes from what the server said, what
// the wire saw, the model and the lease's documented rule (bounds.go,
// timing.go; zklock/internal/session/lease.go argues the rule), never from
// a value the code computed; a value the code records (a renew's touch
// and deadline) is only checked against them:
//   - T, the session timeout, is the one the server granted, from its
//     answer to the connect request (a handshake step: read from the
//     answer's bytes at the wire under zklock.Connect, from go-zookeeper's
//     connection under NewSession);
//   - R, the lease's reach, is 7T/8, or 9T/8 under the expiry-only policy
//     (the session step), and π, the gap, 5/8 of the servers' tickTime
//     the session step says it was told, else of T/2;
//   - a touch (a packet written at w shown touched by c) is a touch step,
//     recorded by the wire tap as each reply (or the connect answer) is
//     read, under Connect; under NewSession, whose wire is not seen, a
//     successful sync or write, from its hand-over to its answer;
//   - a proof's write time is the start of the first write on the
//     connection after it was handed to the client (write steps); under
//     NewSession, the hand-over;
//   - a renew (At: the touch's write time; Until: the deadline) needs
//     Until <= At + R, and At shown at the leader by a handshake of its
//     session read at the wire before it, whose connect request was
//     written at or after At, or by a chain recorded before it: a proof l
//     of the session answered, handed over after another proof k's answer,
//     and a touch confirmed by k's write time − π written at or after At;
//     the holds are held to the code's deadline, then no later than the
//     rule's;
//   - the expiry-only policy's overlap is T/8 (9T/8 - T).
//
// # The model's timing
//
// A step the model takes in one atomic step with another may follow it
// only by the time the code needs to run it, tol = T/16 (timing.go): a
// loss after the disconnection, expiry, new session or lapse that ended
// its hold; a grant after its verdict "now"; a lapse after the lease's
// deadline while holds are valid (no step of the process comes later
// than that unless the lapse came first), and a verdict "now" before the
// deadline. A step late only because its process was stopped (SIGSTOP),
// as whoever stopped it recorded (a pause step), is excused and counted.
//
// # Outside the model
//
// Two things the code has and twotier.pml does not are replayed by
// renderings of their own, each counted in Result (and in the command's
// "outside twotier.pml" line) so that no step passes unremarked: a session
// of the expiry-only loss policy (its session step says so), whose
// disconnection ends no hold, which may grant while disconnected, and
// whose holds may overlap another process's grant by T/8 (policy.go); and
// the read/write lock's and semaphore's nodes, checked as the mutex's
// except for their recipe's rule, which a turn's index cannot show
// (recipe.go).
//
// # Checked against the .pml
//
// So that the rendering cannot drift from the model, twotier.pml built
// with -DEMIT prints each client step, as the model takes it, as a line of
// the trace's JSONL vocabulary (kind, op, proc, sid, node by sequence
// number, out, note, the renew's At on a logical clock). Without EMIT the
// model is unchanged (its preprocessed text is the same token for token),
// and so are the verification runs of go test ./model/. The tests here
// require:
//   - every random simulation of the correct model (spin -n<seed> -DEMIT,
//     40 seeds x 7 settings: each fault kind, cancellation, 3 goroutines, 3
//     processes, 3 rounds) to replay clean (TestSpinSimulations);
//   - the correct model's paths to the steps random simulation seldom
//     takes (a hold told lost after a disconnection or a lapse, a
//     guaranteed delete retried, grantGone, protection mode finding our
//     node, a NONODE multi), pan's error trails to an assertion -DREACH=k
//     placed there and replayed by spin -t, to replay clean
//     (TestSpinReach);
//   - each client mutant's counterexample (pan's trail, in which the
//     mutant's wrong step shows: the model prints a MUTANT line there) to
//     be refused (TestSpinMutants): MUTANT_NO_LOSS_SIGNAL at the
//     disconnection or lapse whose hold is never told lost;
//     MUTANT_READ_RENEWS at the renew whose proof is a read and
//     MUTANT_RENEW_AFTER_EXPIRY at the renew counted from its answer's
//     arrival, each from a touch no handshake nor chain shows (the
//     model's time is an order: its correct renews count from its latest
//     handshake, the mutants' from their own step); OWNER_AFTER_REPLY at the grant naming the new session the
//     owner of a node created in the old one. MUTANT_FORGET_FAILED_DELETE
//     is accepted: its wrong step is an omission (no retry of a failed
//     delete) that only the leader's state calls for, the node still being
//     there; the client's steps are the correct model's when the node is
//     gone. (twotier.pml has no mutant that changes only the environment.)
//     Random simulations of the two lease mutants, which take their wrong
//     step in every run, are refused too (TestSpinMutantSimulations).
package replay

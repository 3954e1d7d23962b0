// Package session is the floor of a zklock session, below its locks: the
// connection and its states, the lease (proof, renewal, its clock), the
// grant of holds and their loss, the write path's link to the connection,
// retries, guaranteed deletes and credentials. zklock.Session is a handle
// over a Floor; the lock floor (zklock's Lock, Hold and recipes) speaks to
// it through the verbs below, never through its fields. It imports
// nothing of zklock.
//
// # What the lock floor calls (the floor's verbs)
//
//   - Making and ending: Dial (zklock.Connect), Wrap (zklock.NewSession),
//     Close; Done, Closed and ClosedErr say whether and why it ended,
//     HardStopped whether the server deleted its nodes itself.
//   - Reading: State (one of the States, states.go), SessionID, Conn (the
//     go-zookeeper connection, for the locks' reads), Config (what it was
//     made with: ExpiryOnly, Logger, MaxRetryWait), Log, OutageSince.
//   - Granting: Waiting counts an acquisition with a node (the lease is
//     kept fresh for it); Grant makes a Member one of the valid holds once
//     the floor can vouch for it. What is asked of a hold is asked of its
//     Member: Vouch, whether the floor vouches for it at this moment (the
//     lease judged then, on the monotonic clock: a deadline passed ends
//     the holds, whether or not the lease's timer has run), Leave as it is
//     released, Forget as it ends.
//   - Its parts, each reached through one accessor: Writes, the write path
//     (package writes): every create, delete and transaction of the locks
//     goes there; Flight, the bound on requests in flight: Admit k places
//     (once the credentials are in place: floor.go's authGate), GiveBack
//     one unused, Send a read (admitted, made on a goroutine of the
//     floor's, waited for or abandoned), LaunchAdmitted a read whose
//     place Admit gave (a listing pipelined behind a create); List, Watch
//     and ListWatched, the locks' three reads (reads.go), each of which
//     chooses its way (with the session's other reads, lister.go, where
//     the connection allows, else go-zookeeper's request, fallback.go),
//     always answers, and registers its watch's callback itself (under
//     Dial, go-zookeeper calls the floor for every event; a watch the
//     session sets itself runs its callback at the next connection too;
//     under Wrap the event comes on Read.Events); Lease: its Timeout (the
//     granted session timeout) and its Stats.
//   - Background work: Go (a goroutine Close waits for), DeleteGuaranteed
//     and UntilSessionOver (retried until done or the session is over),
//     Retry and NewBackOff (the one retry policy), and Refusal (which
//     errors are the server's final answer); AwaitAuth waits for the
//     credentials (for requests outside Flight.Admit, which waits itself).
//
// # What the floor calls back
//
// A Member's lose function, once, when the floor can no longer vouch for
// the hold (ErrDisconnected, ErrSessionExpired, ErrLeaseExpired,
// ErrClosed): it may run on go-zookeeper's event goroutine and must not
// block. The state listener (Config.Listener), from a goroutine of its
// own. Watch callbacks, on go-zookeeper's event goroutine.
//
// # The rules it keeps
//
//   - Loss before grant (lease.go has the argument): a hold is granted
//     only while the lease lies ahead, and every hold is told lost at the
//     lease's deadline at the latest, before the server can expire the
//     session and grant the lock elsewhere; a disconnection, an expiry or
//     a new session ends the holds at once.
//   - An outage, and a lease that lapsed, are told twice: when they begin
//     and when they end (outage.go, lapse.go).
//   - Every error is defined once (errors.go); package zklock re-exports
//     the sentinels its callers can receive.
//
// The lease's reading path, file by file, is in the repository's
// docs/design.md; its explorer (lease_explore_test.go) drives the grant
// against proofs, answers, drops, expiries and Close on a virtual clock.
package session

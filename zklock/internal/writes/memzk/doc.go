// Package memzk is an in-memory double of one ZooKeeper 3.8 server's data
// tree, answering the write path's requests (creates, deletes, sets,
// checks, multis; SetACL and a few reads) with what go-zookeeper v1.0.4's
// Conn returns for them from a real server: the same error values, the
// same per-op results of a multi, the same Stats. A deterministic explorer
// of the session's write path drives it for many thousands of schedules a
// run, so it is small and fast: no goroutines, no clock, no I/O, and no
// answer that depends on the order Go's maps iterate in
// (TestDeterministic). It imports nothing of tierlock.
//
// TestConformance gives random sequences of these requests, from two or
// three sessions, to a real ZooKeeper and to a Tree and compares every
// answer and then the trees; the tests named below write down the
// server's answer for each rule and check both against it. What the
// server does, and the double with it:
//
//   - A sequential node's suffix is the number of children the parent has
//     ever had created (%010d), while the Stat's Cversion counts creates
//     and deletes of children: the server stores the creates and reports
//     2*creates - numChildren. A child's delete (by a request, a session's
//     end or a container pass) moves Cversion, never the next suffix
//     (TestSequenceAndCversion).
//   - A multi is all or nothing. When an op fails, the ops before it
//     report no error, the failing op its own, the ops after it the
//     server's RUNTIMEINCONSISTENCY, for which go-zookeeper has no sentinel
//     (its message is "unknown error: -2"); Multi returns the failing op's
//     error, and nothing of the multi stays: no node, no sequence number,
//     no Cversion (TestMultiAllOrNothing).
//   - The ops of a multi see those before them: a check after a set of the
//     same node sees the set's version, a create after a delete of the same
//     path succeeds (TestMultiAllOrNothing).
//   - A multi that creates a container (flags 4) is applied, but the
//     server answers that op as a create2, which go-zookeeper cannot
//     decode: Multi returns zk.ErrAPIError and the results of the ops
//     before it. A multi that reaches a create with a TTL flag (5 or 6) is
//     refused whole as a marshalling error, go-zookeeper's "unknown error:
//     -5", with no result; other flags fail their op with
//     zk.ErrBadArguments (TestMultiFlags).
//   - A create needs CREATE on the parent, a delete DELETE on the parent
//     (the node's own ACL does not matter), a set WRITE and a check READ on
//     the node, SetACL ADMIN; Get and Children need READ, Exists nothing;
//     a refusal is zk.ErrNoAuth. The double's sessions hold no credentials:
//     world:anyone entries grant their permissions, digest and ip entries
//     are taken but grant nothing (TestRefusals).
//   - Each request's checks come in the server's order: a create's flags,
//     the ACL given, the parent, CREATE, the path with its suffix,
//     NodeExists, NoChildrenForEphemerals; a delete's parent, DELETE, the
//     node, the version, NotEmpty. go-zookeeper checks a single request's
//     path (zk.ErrInvalidPath) and a create's flags before sending it, not
//     a multi's, whose malformed paths the server refuses with
//     zk.ErrBadArguments or zk.ErrNoNode (TestRefusals).
//   - A session's end deletes its ephemeral nodes
//     (TestSequenceAndCversion); a container pass deletes the empty
//     containers that have had a child (TestContainersReaped).
//
// Beyond what a server can be asked: a session the tree was told has ended
// has its writes refused with zk.ErrSessionExpired, so that no ephemeral
// node outlives its session (TestSessionEndedRefusesWrites); zxids count
// the tree's write requests (a multi is one) and times are zero; the tree
// holds "/" only, not ZooKeeper's /zookeeper subtree.
package memzk

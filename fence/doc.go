// Package fence is the resource's side of fencing tokens: a Fence admits a
// token no lower than the highest it has admitted and refuses lower ones
// with ErrStaleToken, so that a holder that lost its lock without knowing
// it (paused past its session timeout, partitioned) cannot write once a
// later holder has.
//
// A lock's guard at the server (zklock.Lock.Txn) covers writes to
// ZooKeeper; a resource elsewhere (a database row, a file, a service) can
// only be protected by checking the token itself, and that is what a
// Fence does for an in-process resource or a service that fronts one. The
// tokens are the ones zklock.Lock.Token and tier.Lock.Token return: they
// increase strictly from one holder of a path to the next.
//
// Equal tokens are admitted. Under tier.WithHandoff consecutive holders in
// one process share a ZooKeeper node and so one token; among them the
// order is tier's to keep (its guarded writes refuse a previous local
// holder), not the fence's.
//
// Admit only records the token: the check and the write it guards are two
// steps, and a holder admitted just before a later holder could still
// write after it. Do runs the write inside the fence's critical section,
// so that no write of a token can follow the admission of a higher one.
// Keyed is a set of fences by key, one per resource.
//
// The holder's side: ask the hold for its token as the write is made, not
// once at the start of the work. tier's Token judges the hold at that
// moment (its lease, on the monotonic clock) and refuses a lost one, with
// 0 and the loss: a process resumed from a stop past its session is told
// so before it writes, even where no later holder has written yet, and a
// 0 passed on regardless is refused here (ErrInvalidToken).
package fence

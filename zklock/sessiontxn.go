package zklock

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Txn applies ops, a ZooKeeper multi transaction of *zk.CreateRequest,
// *zk.SetDataRequest, *zk.DeleteRequest and *zk.CheckVersionRequest,
// through the session's writer: all of them or none, sent with the other
// writes the session has waiting, in one multi. It is Hold.Txn without a
// hold's guard, for code built on the session whose writes must not each
// pay a round trip and a transaction of their own (gocronlock's run
// records). The responses are those of ops, in order.
//
// Errors: applied, nil; not sent, ErrNilContext, ErrInvalidOp,
// ErrSessionClosed, or ctx's error when it ended before the writer sealed
// the transaction into a request; refused by the server, nothing applied,
// an *OpError wrapping the server's error (the responses are returned
// with it); unknown, ErrOutcomeUnknown wrapping the cause (a lost
// connection, or ctx's error when it ended while the request was out).
// What each says is true, as Hold.Txn states it.
func (s *Session) Txn(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	switch {
	case s == nil:
		return nil, errNil("Session")
	case ctx == nil:
		return nil, ErrNilContext
	case len(ops) == 0:
		return nil, fmt.Errorf("%w: no ops", ErrInvalidOp)
	case s.f.Closed():
		return nil, s.f.ClosedErr()
	}
	if err := validateOps(ops); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := s.f.Writes()
	return txnResult(w.Await(ctx, w.Txn(ops)), ops, 0)
}

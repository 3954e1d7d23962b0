package zklock

import (
	"context"
	"errors"
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
// ErrSessionClosed, or ctx's error when it ended before the writer took
// the transaction; refused by the server, nothing applied, an *OpError
// wrapping the server's error (the responses are returned with it);
// unknown, ErrOutcomeUnknown wrapping the cause (a lost connection, or
// ctx's error when it ended while the request was out).
func (s *Session) Txn(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	switch {
	case s == nil:
		return nil, errNil("Session")
	case ctx == nil:
		return nil, ErrNilContext
	case len(ops) == 0:
		return nil, fmt.Errorf("%w: no ops", ErrInvalidOp)
	case s.isClosed():
		return nil, s.closedErr()
	}
	if err := validateOps(ops); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := s.writes.txn(opPath(ops[0]), ops)
	select {
	case <-w.done:
	case <-ctx.Done():
		if s.writes.withdraw(w) {
			return nil, ctx.Err() // not applied: never sent, or back from a refused batch
		}
		return nil, fmt.Errorf("%w: %w", ErrOutcomeUnknown, ctx.Err())
	}
	if w.res == nil && errors.Is(w.err, ErrSessionClosed) {
		return nil, w.err // never sent: the session closed first
	}
	i, err := failingOp(len(ops), w.res, w.err)
	switch {
	case err != nil:
		return nil, err
	case i < 0:
		return w.res, nil
	}
	return w.res, &OpError{Index: i, Path: opPath(ops[i]), Err: w.res[i].Error}
}

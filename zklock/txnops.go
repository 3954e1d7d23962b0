package zklock

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// Errors of transactions (Hold.Txn, Session.Txn).
var (
	// ErrStaleHold reports a guarded write the server refused because the
	// hold's node no longer exists: the hold ended at the server (expiry,
	// deletion, release) whether or not this client had noticed. Nothing
	// of the transaction was applied. The error also matches ErrLockLost.
	ErrStaleHold = errors.New("zklock: hold is stale at the server")
	// ErrInvalidOp reports an op Txn refuses before sending anything: nil,
	// of a type other than *zk.CreateRequest, *zk.SetDataRequest,
	// *zk.DeleteRequest and *zk.CheckVersionRequest, with an invalid path
	// (the error then also matches ErrInvalidPath), an empty ACL, flags the
	// multi cannot carry (TTL; a container, whose answer go-zookeeper cannot
	// read), or writing the hold's own node.
	ErrInvalidOp = errors.New("zklock: invalid transaction op")
)

// validateOps refuses, before anything is sent, what the server would
// refuse or go-zookeeper would fail on: nil ops, other types, invalid
// paths, empty ACLs, flags a multi's create cannot carry.
func validateOps(ops []any) error {
	for i, op := range ops {
		if err := validateOp(op); err != nil {
			return fmt.Errorf("%w: op %d: %w", ErrInvalidOp, i, err)
		}
	}
	return nil
}

func validateOp(op any) error {
	switch o := op.(type) {
	case nil:
		return errors.New("nil")
	case *zk.CreateRequest:
		if o == nil {
			return errors.New("nil *zk.CreateRequest")
		}
		switch o.Flags {
		case 0, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential:
		case zk.FlagContainer:
			// The server applies it, but answers the multi in a form
			// go-zookeeper cannot read (zk.ErrAPIError): the caller could
			// not be told the truth.
			return errors.New("create of a container (go-zookeeper cannot read the server's answer to a multi that carries one: use Conn.CreateContainer)")
		default:
			return fmt.Errorf("create flags %d (TTL nodes need CreateTTL, which a multi cannot carry)", o.Flags)
		}
		if len(o.Acl) == 0 {
			return errors.New("create with an empty ACL")
		}
		p := o.Path
		if o.Flags&zk.FlagSequence != 0 {
			p += "0" // the server appends the sequence number before it checks the path
		}
		return ValidatePath(p)
	case *zk.SetDataRequest:
		if o == nil {
			return errors.New("nil *zk.SetDataRequest")
		}
		return ValidatePath(o.Path)
	case *zk.DeleteRequest:
		if o == nil {
			return errors.New("nil *zk.DeleteRequest")
		}
		return ValidatePath(o.Path)
	case *zk.CheckVersionRequest:
		if o == nil {
			return errors.New("nil *zk.CheckVersionRequest")
		}
		return ValidatePath(o.Path)
	}
	switch op.(type) {
	case zk.CreateRequest, zk.SetDataRequest, zk.DeleteRequest, zk.CheckVersionRequest:
		// Txn's ops are ...any (go-zookeeper's Multi's own form), so a
		// value cannot be refused at compile time without changing the
		// signature: it is refused here, saying what to write instead.
		return fmt.Errorf("%T is a value: pass a pointer, &%T{...}", op, op)
	}
	return fmt.Errorf("unsupported type %T (want *zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest or *zk.CheckVersionRequest)", op)
}

// txnResult is what a transaction's end r tells its caller; its first
// guards ops are a hold's guard, whose refusal Hold.Txn tells itself.
// Withdrawn (never applied) carries ctx's error; a transaction too large
// to send (TooLarge) is ErrInvalidOp; Unknown wraps its cause in
// ErrOutcomeUnknown.
func txnResult(r writes.Result, ops []any, guards int) ([]zk.MultiResponse, error) {
	switch r.Verdict {
	case writes.Applied:
		return r.Results[guards:], nil
	case writes.Refused:
		i := r.Op - guards
		return r.Results[guards:], &OpError{Index: i, Path: writes.OpPath(ops[i]), Err: r.Err}
	case writes.Closed, writes.Withdrawn:
		return nil, r.Err // never sent: the session's close, or the caller's ctx
	case writes.TooLarge:
		return nil, fmt.Errorf("%w: transaction: %w", ErrInvalidOp, r.Err) // never sent
	}
	if errors.Is(r.Err, ErrOutcomeUnknown) {
		return nil, r.Err
	}
	return nil, fmt.Errorf("%w: %w", ErrOutcomeUnknown, r.Err)
}

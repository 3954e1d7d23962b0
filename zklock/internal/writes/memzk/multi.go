package memzk

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
)

// Multi applies ops (*zk.CreateRequest, *zk.DeleteRequest,
// *zk.SetDataRequest, *zk.CheckVersionRequest) for session sid as one
// transaction and returns what Conn.Multi returns for them:
//
//   - all applied: a result per op, the created path of a create, the new
//     Stat of a set, nothing else; and no error;
//   - none applied: a result per op, no error for the ops before the one
//     that failed, its error for that one, "unknown error: -2" (the
//     server's RUNTIMEINCONSISTENCY) for the ops after it; and the failing
//     op's error;
//   - all applied, but an op creates a container: the results of the ops
//     before it and zk.ErrAPIError (the server answers a container's create
//     as create2, which go-zookeeper cannot decode);
//   - none applied, because the server could not take the multi apart (a
//     create with a TTL flag, once the ops before it passed): no result
//     and "unknown error: -5" (MARSHALLINGERROR).
//
// An op of another type (a value rather than a pointer, say) is refused
// before anything is sent, as Conn.Multi refuses it, and so is a nil
// pointer, which go-zookeeper fails to encode (zk.ErrUnhandledFieldType).
// A session the server has ended gets zk.ErrSessionExpired and no result.
func (t *Tree) Multi(sid int64, ops ...any) ([]zk.MultiResponse, error) {
	for _, op := range ops {
		switch op.(type) {
		case *zk.CreateRequest, *zk.DeleteRequest, *zk.SetDataRequest, *zk.CheckVersionRequest:
		default:
			return nil, fmt.Errorf("unknown operation type %T", op)
		}
	}
	if slices.ContainsFunc(ops, null) {
		return []zk.MultiResponse{}, zk.ErrUnhandledFieldType
	}
	if err := t.begin(sid); err != nil {
		return []zk.MultiResponse{}, err
	}
	defer t.end()
	res := make([]zk.MultiResponse, len(ops))
	for i, op := range ops {
		r, err := t.op(sid, op)
		if errors.Is(err, errMarshalling) {
			t.rollback()
			return []zk.MultiResponse{}, err
		}
		if err != nil {
			t.rollback()
			return failed(res, i, err), err
		}
		res[i] = r
	}
	for i, op := range ops {
		if c, ok := op.(*zk.CreateRequest); ok && c.Flags == zk.FlagContainer {
			return res[:i], zk.ErrAPIError
		}
	}
	return res, nil
}

// null reports whether op, of a type Multi takes, is a nil pointer.
func null(op any) bool {
	switch o := op.(type) {
	case *zk.CreateRequest:
		return o == nil
	case *zk.DeleteRequest:
		return o == nil
	case *zk.SetDataRequest:
		return o == nil
	case *zk.CheckVersionRequest:
		return o == nil
	}
	return false
}

// op applies one op of a multi.
func (t *Tree) op(sid int64, op any) (zk.MultiResponse, error) {
	switch o := op.(type) {
	case *zk.CreateRequest:
		switch {
		case o.Flags == zk.FlagTTL || o.Flags == zk.FlagPersistentSequentialWithTTL:
			// The server reads the op as a plain create, then handles
			// it as a TTL create, whose record it is not: the cast
			// fails and the whole request with it.
			return zk.MultiResponse{}, errMarshalling
		case o.Flags < 0 || o.Flags > zk.FlagContainer:
			return zk.MultiResponse{}, zk.ErrBadArguments
		}
		p, err := t.create(sid, o.Path, o.Data, o.Acl, modes[o.Flags])
		return zk.MultiResponse{String: p}, err
	case *zk.DeleteRequest:
		return zk.MultiResponse{}, t.delete(o.Path, o.Version)
	case *zk.SetDataRequest:
		s, err := t.set(o.Path, o.Data, o.Version)
		return zk.MultiResponse{Stat: s}, err
	case *zk.CheckVersionRequest:
		return zk.MultiResponse{}, t.check(o.Path, o.Version)
	}
	return zk.MultiResponse{}, fmt.Errorf("unknown operation type %T", op)
}

// failed is the answer of a multi whose op i failed with err.
func failed(res []zk.MultiResponse, i int, err error) []zk.MultiResponse {
	for j := range res {
		switch {
		case j < i:
			res[j] = zk.MultiResponse{}
		case j == i:
			res[j] = zk.MultiResponse{Error: err}
		default:
			res[j] = zk.MultiResponse{Error: errRuntimeInconsistency}
		}
	}
	return res
}

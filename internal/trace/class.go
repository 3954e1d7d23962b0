package trace

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
)

// Class sorts a request's error into what the model tells apart: "" for
// none, "nonode" (NONODE), "exists", "conn" (ERR: the request's fate
// unknown), "expired", "ctx" (the caller gave up), "refused" (the server
// refused it), or "err".
func Class(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, zk.ErrNoNode):
		return "nonode"
	case errors.Is(err, zk.ErrNodeExists):
		return "exists"
	case errors.Is(err, zk.ErrSessionExpired):
		return "expired"
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer),
		errors.Is(err, zk.ErrClosing), errors.Is(err, zk.ErrSessionMoved):
		return "conn"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "ctx"
	case errors.Is(err, zk.ErrNoAuth), errors.Is(err, zk.ErrBadArguments),
		errors.Is(err, zk.ErrInvalidACL), errors.Is(err, zk.ErrNotEmpty):
		return "refused"
	}
	return "err"
}

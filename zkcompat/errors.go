package zkcompat

import (
	"errors"

	"github.com/go-zookeeper/zk"
)

// zk.Lock returns the errors of its requests as go-zookeeper gives them,
// its own sentinels' values themselves, and code written against it
// compares them with ==. The drop-in's errors come through tier and
// zklock, which wrap them (naming the lock, the tier, the cause); where
// one wraps a go-zookeeper sentinel, the drop-in returns that sentinel
// itself (TestErrorsAreZkLocks).

// zkErrors are go-zookeeper's error values, the connection's first: an
// error that wraps two (a loss whose cause was the closed connection, say)
// is the connection's.
var zkErrors = []error{
	zk.ErrConnectionClosed, zk.ErrNoServer, zk.ErrClosing, zk.ErrSessionExpired, zk.ErrSessionMoved,
	zk.ErrNoNode, zk.ErrNoAuth, zk.ErrAuthFailed, zk.ErrInvalidACL, zk.ErrInvalidPath, zk.ErrInvalidFlags,
	zk.ErrBadVersion, zk.ErrNodeExists, zk.ErrNotEmpty, zk.ErrNoChildrenForEphemerals, zk.ErrBadArguments,
	zk.ErrAPIError, zk.ErrUnknown, zk.ErrNothing, zk.ErrReconfigDisabled, zk.ErrShortBuffer,
	zk.ErrPtrExpected, zk.ErrUnhandledFieldType, zk.ErrDeadlock, zk.ErrNotLocked,
}

// zkSentinel returns the go-zookeeper error value err is or wraps, nil
// when none.
func zkSentinel(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range zkErrors {
		if errors.Is(err, s) {
			return s
		}
	}
	return nil
}

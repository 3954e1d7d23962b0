package gocronlock

import "errors"

// ErrNotLeader is Elector.IsLeader's answer while this instance does not
// lead. The Locker's and the Elector's other errors are runonce's
// (runonce.ErrClosed, runonce.ErrNil, runonce.ErrInvalidOption, ...), for
// errors.Is.
var ErrNotLeader = errors.New("gocronlock: not the leader")

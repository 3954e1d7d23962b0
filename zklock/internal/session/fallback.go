package session

import (
	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
)

// The fallback: go-zookeeper's own request for each read kind, the one way
// a read goes when the session's batches cannot carry it (reads.go) or the
// server refused them (lister.go's oneByOne).

// zkChildren is the listing's go-zookeeper way (getChildren2), traced
// where traced (the lister traces its own).
func (s *Floor) zkChildren(path string, traced bool) ([]string, *zk.Stat, error) {
	if traced {
		trace.Sent(s.zc, trace.OpList, path)
	}
	c, st, err := s.zc.Children(path)
	if traced {
		trace.Listed(s.zc, trace.OpList, path, c, st, err)
	}
	return c, st, err
}

// zkGetW is a node read's with a data watch (GetW), traced where traced.
func (s *Floor) zkGetW(path string, traced bool) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if traced {
		trace.Sent(s.zc, trace.OpGetW, path)
	}
	d, st, ev, err := s.zc.GetW(path)
	if traced {
		trace.Watched(s.zc, path, st, err)
	}
	return d, st, ev, err
}

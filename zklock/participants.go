package zklock

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Participant is one node in a lock's queue.
type Participant struct {
	Node     string // node name under the lock path
	Sequence int32  // its sequence number
	Data     []byte // what its creator wrote (zklock: JSON host, pid, label)
	Holder   bool   // first in the queue: it holds the lock
	// Revoked: its holder was asked to release it (RevokeNode). Data is
	// then RevokeMessage, which replaced what its creator wrote.
	Revoked bool
}

// Participants lists the lock's queue in order, holder first, with each
// node's data.
func (l *Lock) Participants(ctx context.Context) ([]Participant, error) {
	if l == nil {
		return nil, ErrNilLock
	}
	if ctx == nil {
		return nil, ErrNilContext
	}
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	var children []string
	err := l.s.retry(ctx, func() error {
		var err error
		children, _, err = l.s.conn.Children(l.path)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("zklock: list %s: %w", l.path, err)
	}
	var out []Participant
	for _, e := range sortQueue(children) {
		data, _, err := l.s.conn.Get(l.path + "/" + e.name)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("zklock: read %s: %w", e.name, err)
		}
		out = append(out, Participant{Node: e.name, Sequence: e.seq, Data: data, Holder: len(out) == 0, Revoked: IsRevocation(data)})
	}
	return out, nil
}

package zklock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/session"
)

// ListParticipants lists the queue at path (a lock path, a read/write
// lock's path, or a semaphore's <path>/leases) in issue order, holder
// first, with each node's data and stat. A path with contenders lists
// them (every family that Contender knows); a path with none lists its
// semaphore leases. Children that are neither are left out; a missing path
// has an empty queue.
//
// It costs one getChildren and one getData per node (nodes that vanish
// between the two are left out), and waits for the session's credentials
// first (WithDigestAuth). The listing is a snapshot: by the time it
// returns, the queue may have moved.
func ListParticipants(ctx context.Context, s *Session, path string) ([]Participant, error) {
	switch {
	case s == nil:
		return nil, ErrNilSession
	case ctx == nil:
		return nil, ErrNilContext
	}
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	if s.f.Closed() {
		return nil, s.f.ClosedErr()
	}
	if err := s.f.AwaitAuth(ctx); err != nil {
		return nil, err
	}
	return participants(ctx, s.f, path)
}

// Participants lists the lock's queue in order, holder first, with each
// node's data: ListParticipants on the lock's path.
func (l *Lock) Participants(ctx context.Context) ([]Participant, error) {
	if l == nil {
		return nil, errNil("Lock")
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
	if l.f.Closed() {
		return nil, ErrSessionClosed
	}
	return participants(ctx, l.f, l.path)
}

// participants reads the queue at path: see ListParticipants.
func participants(ctx context.Context, f *session.Floor, path string) ([]Participant, error) {
	if err := f.AwaitAuth(ctx); err != nil {
		return nil, err
	}
	var children []string
	err := f.Retry(ctx, func() error {
		var err error
		children, _, err = f.Conn().Children(path)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("zklock: list %s: %w", path, err)
	}
	q := sortQueue(children)
	if len(q) == 0 {
		q = sortBy(children, parseLease)
	}
	reads := readAll(ctx, f, path, q)
	out := make([]Participant, 0, len(q))
	kept := make([]entry, 0, len(q))
	for i, e := range q {
		r := reads[i]
		if errors.Is(r.err, zk.ErrNoNode) {
			continue // released since the listing
		}
		if r.err != nil {
			return nil, fmt.Errorf("zklock: read %s/%s: %w", path, e.name, r.err)
		}
		f, _, _ := ParseNode(e.name)
		p := Participant{Node: e.name, Sequence: e.seq, Family: f, Data: r.data,
			Owner: r.stat.EphemeralOwner, Created: time.UnixMilli(r.stat.Ctime), Revoked: IsRevocation(r.data)}
		switch p.Family {
		case FamilyCuratorRead, FamilyKazooRead:
			p.Holder, _ = readRule(append(kept, e), len(kept), "")
		default:
			p.Holder = len(kept) == 0
		}
		kept = append(kept, e)
		out = append(out, p)
	}
	return out, nil
}

// nodeRead is the outcome of one getData.
type nodeRead struct {
	data []byte
	stat *zk.Stat
	err  error
}

// maxReadsInFlight bounds the getData requests a listing has on the wire.
const maxReadsInFlight = 64

// readAll reads the data and stat of every node of q, pipelined: up to
// maxReadsInFlight requests are in flight on the session's connection at
// once, so a listing costs about one round trip per 64 nodes rather than
// one per node. Each read retries on a lost connection until ctx ends.
// The results are in q's order; each goroutine writes only its own slot
// and wg.Wait orders those writes before the caller's reads.
func readAll(ctx context.Context, f *session.Floor, path string, q []entry) []nodeRead {
	reads := make([]nodeRead, len(q))
	slots := make(chan struct{}, maxReadsInFlight)
	var wg sync.WaitGroup
	for i, e := range q {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			r := &reads[i]
			r.err = f.Retry(ctx, func() error {
				var err error
				r.data, r.stat, err = f.Conn().Get(path + "/" + e.name)
				return err
			})
		}()
	}
	wg.Wait()
	return reads
}

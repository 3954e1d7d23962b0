package zklock

import (
	"context"
	"sync"
)

// pipeline holds a session's deletes that are not on the wire yet, so that
// an acquisition of the same path can send one in its create's multi
// transaction, and so that the session never has two nodes queued on one
// path: a create waits until the delete before it is on the wire, and
// ZooKeeper applies a session's requests in the order they arrive.
type pipeline struct {
	s       *Session
	mu      sync.Mutex
	pending map[string]*pendingDelete // by lock path
}

// pendingDelete is the node of a release whose delete is not on the wire
// yet (sent == nil), or is being sent (sent closes once it is, or once the
// delete is over).
type pendingDelete struct {
	node  string
	owner int64 // the session that created node
	sent  chan struct{}
}

func (p *pipeline) init(s *Session) {
	p.s = s
	p.pending = make(map[string]*pendingDelete)
}

// queueDelete schedules the delete of a released or abandoned node of the
// lock at path. The delete is handed to a new goroutine, which the runtime
// runs after this one yields: an acquisition of the same path on this
// session that comes first (the same goroutine acquiring again, or the
// next local holder) takes it into its own create's multi transaction,
// saving a log write on the server. Other processes wait at most a
// scheduling delay longer for it. Pending deletes are kept per session and
// path, not per Lock, so that a new Lock on the path sees them too.
func (p *pipeline) queueDelete(path, node string, owner int64) {
	d := &pendingDelete{node: node, owner: owner}
	if p.s.cfg.noPipelining || p.s.tap == nil {
		p.deleteSerial(path, d)
		return
	}
	p.mu.Lock()
	if old := p.pending[path]; old != nil && old.sent == nil {
		p.s.deleteInBackground(old.node, old.owner)
	}
	p.pending[path] = d
	p.mu.Unlock()
	p.s.goBackground(func() { p.flush(path, d) })
}

// flush sends d's delete unless an acquisition took it. The delete is
// guaranteed: it is retried, whatever the error, until the node is gone or
// its session is over, and the entry stays in pending (so that the next
// create on the path waits for it) until then or until it is on the wire.
func (p *pipeline) flush(path string, d *pendingDelete) {
	p.mu.Lock()
	if p.pending[path] != d || d.sent != nil {
		p.mu.Unlock()
		return
	}
	sent := make(chan struct{})
	d.sent = sent
	p.mu.Unlock()
	fin := p.s.send(context.Background(), d.node, []int32{opDelete}, func() { p.s.deleteGuaranteed(d.node, d.owner) })
	p.mu.Lock()
	if p.pending[path] == d {
		delete(p.pending, path)
	}
	p.mu.Unlock()
	close(sent)
	<-fin
}

// deleteSerial deletes d's node without folding: the entry is in flight at
// once, and stays until the delete is done, so that the next create on the
// path waits for it.
func (p *pipeline) deleteSerial(path string, d *pendingDelete) {
	done := make(chan struct{})
	d.sent = done
	p.mu.Lock()
	if old := p.pending[path]; old != nil && old.sent == nil {
		p.s.deleteInBackground(old.node, old.owner)
	}
	p.pending[path] = d
	p.mu.Unlock()
	p.s.goBackground(func() {
		p.s.deleteGuaranteed(d.node, d.owner)
		p.mu.Lock()
		if p.pending[path] == d {
			delete(p.pending, path)
		}
		p.mu.Unlock()
		close(done)
	})
}

// take returns the node (and its session) whose delete an acquisition on
// path must send in its create's transaction, or a channel to wait on while
// such a delete is being written.
func (p *pipeline) take(path string) (node string, owner int64, inFlight <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.pending[path]
	switch {
	case d == nil:
		return "", 0, nil
	case d.sent != nil:
		return "", 0, d.sent
	}
	delete(p.pending, path)
	return d.node, d.owner, nil
}

// send runs op (one request) on a goroutine of the session's and returns
// once the request with one of opcodes carrying key is on the wire, once op
// has returned, or once ctx ends; the returned channel closes when op
// returns. Without a wire tap it waits for op to return (or ctx to end).
func (s *Session) send(ctx context.Context, key string, opcodes []int32, op func()) <-chan struct{} {
	fin := make(chan struct{})
	var sent <-chan struct{}
	if s.tap != nil && !s.cfg.noPipelining {
		w := s.tap.expect(key, opcodes...)
		defer s.tap.forget(w)
		sent = w.sent
	}
	s.goBackground(func() {
		defer close(fin)
		op()
	})
	select {
	case <-sent:
	case <-fin:
	case <-ctx.Done():
	}
	return fin
}

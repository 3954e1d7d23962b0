package runonce

import (
	"errors"
	"sync"
)

// A Close and the claims in flight. A claim's write of the run node
// counts as the tick's run for every instance; were Close to end the
// job's lock between that write and the claim's take of the lock, the
// tick would run nowhere. So a claim about to write enters (writing is
// refused once Close has begun: the tick is left unmarked, ErrClosed),
// and Close waits for the claims that entered to finish (their runs
// stored, or their failure returned) before it ends the locks: a claim in
// flight at Close either finishes, writes and runs (its run then released
// by Close, its context cancelled with ErrClosed), or leaves the tick to
// the others.

// gate admits a Runner's claims to writing until Close shuts it.
type gate struct {
	mu     sync.Mutex
	closed bool
	claims sync.WaitGroup // claims that may write
}

// enter admits p's claim to writing, once; ErrClosed after shut.
func (g *gate) enter(p *probe) error {
	if p.entered {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errClaimClosed
	}
	// Under g.mu with closed false: before shut's Wait (happens-before
	// through g.mu), so that Wait counts it.
	g.claims.Add(1)
	p.entered = true
	return nil
}

// leave ends p's claim's writing, if it entered. A claim leaves once its
// run is stored in its job, so that Close, after shut, finds it there.
func (g *gate) leave(p *probe) {
	if p.entered {
		p.entered = false
		g.claims.Done()
	}
}

// shut refuses writing from now on, and waits for the claims that
// entered to leave.
func (g *gate) shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.claims.Wait()
}

// errClaimClosed ends a claim that Close found before its write.
var errClaimClosed = errors.Join(ErrClosed, errors.New("the tick is left to the other instances"))

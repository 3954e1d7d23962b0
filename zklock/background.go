package zklock

import "sync"

// The background goroutines of a session (goBackground): requests left to
// finish after their caller gave up, guaranteed deletes, the flusher's
// sends. Close waits for them: a group.

// group counts running goroutines, like a sync.WaitGroup that may be added
// to while a wait is under way: an acquisition racing Session.Close can
// start background work (its node's delete) after Close began waiting,
// which a WaitGroup forbids when its count is at zero ("WaitGroup is
// reused before previous Wait has returned"). wait returns once the count
// has been zero; work started after that is not waited for.
type group struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil while n is 0
}

func (g *group) add() {
	g.mu.Lock()
	if g.n == 0 {
		g.zero = make(chan struct{})
	}
	g.n++
	g.mu.Unlock()
}

func (g *group) done() {
	g.mu.Lock()
	g.n--
	if g.n == 0 {
		close(g.zero)
		g.zero = nil
	}
	g.mu.Unlock()
}

func (g *group) wait() {
	g.mu.Lock()
	z := g.zero
	g.mu.Unlock()
	if z != nil {
		<-z
	}
}

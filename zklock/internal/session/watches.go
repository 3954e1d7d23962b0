package session

import (
	"sync"

	"github.com/go-zookeeper/zk"
)

// Watches are the callbacks of the session's watches, by the path their
// events name: a waiter's predecessor (the callback sets its BooleanMutex),
// a holder's own node. Like ZooKeeper's watches they are one-shot: an
// event for a path calls and removes every callback registered on it.
type Watches struct {
	mu sync.Mutex
	m  map[string][]*watchFn
	// dispatching: watch events reach the callbacks (under Dial:
	// go-zookeeper calls the floor for every event, watch events included,
	// synchronously and before it notifies the watch's own channel; under
	// Wrap it cannot, and watchers wait on their channels); set as the
	// floor is made, before anyone reads it.
	dispatching bool
}

type watchFn struct {
	fn  func(zk.Event)
	own bool // set by the session's setWatches (AddOwn)
}

// Add registers fn for the next event on path and returns the function
// that removes it (a no-op once it ran). fn runs on go-zookeeper's event
// goroutine: it must not block.
func (ws *Watches) Add(path string, fn func(zk.Event)) (unwatch func()) {
	return ws.add(path, &watchFn{fn: fn})
}

// AddOwn registers fn as Add does, for a watch the session sets itself (Floor.Watch). Such a
// watch lives on the connection that set it (go-zookeeper sets only its
// own again on the next), so fn runs too, with the session's event, when
// a new connection of the session is made or the session expires: its
// caller reads again what it watched.
func (ws *Watches) AddOwn(path string, fn func(zk.Event)) (unwatch func()) {
	return ws.add(path, &watchFn{fn: fn, own: true})
}

// add registers w on path (see Add).
func (ws *Watches) add(path string, w *watchFn) (unwatch func()) {
	ws.mu.Lock()
	if ws.m == nil {
		ws.m = make(map[string][]*watchFn)
	}
	ws.m[path] = append(ws.m[path], w)
	ws.mu.Unlock()
	return func() {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		l := ws.m[path]
		for i, x := range l {
			if x == w {
				l = append(l[:i], l[i+1:]...)
				break
			}
		}
		if len(l) == 0 {
			delete(ws.m, path)
		} else {
			ws.m[path] = l
		}
	}
}

// dispatch calls, and removes, the callbacks registered on ev's path.
func (ws *Watches) dispatch(ev zk.Event) {
	ws.mu.Lock()
	l := ws.m[ev.Path]
	delete(ws.m, ev.Path)
	ws.mu.Unlock()
	for _, w := range l {
		w.fn(ev)
	}
}

// connected calls, and removes, the callbacks of the session's own
// watches (AddOwn), with ev: a new connection, on which none is set, or
// the session's expiry.
func (ws *Watches) connected(ev zk.Event) {
	var fire []*watchFn
	ws.mu.Lock()
	for p, l := range ws.m {
		kept := l[:0:0]
		for _, w := range l {
			if w.own {
				fire = append(fire, w)
			} else {
				kept = append(kept, w)
			}
		}
		if len(kept) == 0 {
			delete(ws.m, p)
		} else if len(kept) < len(l) {
			ws.m[p] = kept
		}
	}
	ws.mu.Unlock()
	for _, w := range fire {
		w.fn(ev)
	}
}

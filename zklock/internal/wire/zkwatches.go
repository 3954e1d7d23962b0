package wire

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// zkWatches is the tap's record of the watches go-zookeeper holds, kept
// from what it writes and reads as go-zookeeper v1.0.4 keeps its own
// (conn.go: addWatcher in each W request's answer, notifyWatches for each
// event, invalidateWatches at an expiry): a new connection's setWatches
// comes from go-zookeeper only when it holds one, and the connection's
// order (order.go) and its first reply (tappedConn.holdFirstReply) wait
// for it only then. Paths are go-zookeeper's own, outside any chroot:
// requests are read as it writes them, events as it reads them.
type zkWatches struct {
	mu    sync.Mutex
	asks  map[int32]watchAsk    // W requests written and not answered, by xid
	nasks atomic.Int32          // len(asks), read without mu on every reply
	held  map[watchAsk]struct{} // what go-zookeeper holds
}

// watchAsk is a W request's path and opcode; once answered, the watch it
// set (kind).
type watchAsk struct {
	path string
	kind watchKind
}

type watchKind int8

// go-zookeeper's watch types.
const (
	watchData watchKind = iota
	watchExist
	watchChild
	watchExistsReq // an exists request's: data when the node is, exist when it is not
)

// ZooKeeper's error code for a missing node.
const codeNoNode = -101

// wrote notes a request go-zookeeper wrote (frame b: length, xid, opcode,
// fields) that sets a watch: exists, getData or getChildren2 with the
// watch flag after the path.
func (w *zkWatches) wrote(b []byte) {
	var kind watchKind
	switch opcode(b) {
	case opExists:
		kind = watchExistsReq
	case OpGetData:
		kind = watchData
	case OpGetChildren2, opGetChildren:
		kind = watchChild
	default:
		return
	}
	p := firstPath(b, opcode(b))
	if end := 16 + len(p); p == nil || len(b) <= end || b[end] == 0 {
		return // no watch asked
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.asks == nil {
		w.asks, w.held = make(map[int32]watchAsk), make(map[watchAsk]struct{})
	}
	w.asks[int32(binary.BigEndian.Uint32(b[4:8]))] = watchAsk{path: string(p), kind: kind}
	w.nasks.Store(int32(len(w.asks)))
}

// asked reports whether xid is a W request's, unanswered.
func (w *zkWatches) asked(xid int32) bool {
	if w.nasks.Load() == 0 {
		return false // the common case: no lock
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.asks[xid]
	return ok
}

// answered takes the answer to the W request of xid, with error code
// code: what go-zookeeper's answer function adds.
func (w *zkWatches) answered(xid, code int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, ok := w.asks[xid]
	if !ok {
		return
	}
	delete(w.asks, xid)
	w.nasks.Store(int32(len(w.asks)))
	switch {
	case a.kind == watchExistsReq && code == 0:
		a.kind = watchData
	case a.kind == watchExistsReq && code == codeNoNode:
		a.kind = watchExist
	case code != 0:
		return
	}
	w.held[a] = struct{}{}
}

// event takes a watch event's fields (type, state, path): the watches
// go-zookeeper's notifyWatches ends.
func (w *zkWatches) event(typ int32, path string) {
	var ends []watchKind
	switch typ {
	case 1: // created
		ends = []watchKind{watchExist}
	case 3: // data changed
		ends = []watchKind{watchExist, watchData}
	case 4: // children changed
		ends = []watchKind{watchChild}
	case 2: // deleted
		ends = []watchKind{watchExist, watchData, watchChild}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range ends {
		delete(w.held, watchAsk{path: path, kind: k})
	}
}

// expired forgets every watch: go-zookeeper's are invalidated with the
// session (its asks' answers never come on the connection that ended).
func (w *zkWatches) expired() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.held)
	clear(w.asks)
	w.nasks.Store(0)
}

// connected forgets the asks of a connection that ended: a request
// written and unanswered there is failed by go-zookeeper, its watch never
// added.
func (w *zkWatches) connected() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.asks)
	w.nasks.Store(0)
}

// any reports whether go-zookeeper holds a watch.
func (w *zkWatches) any() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.held) > 0
}

// eventFields returns a watch event frame's type and path (f: length,
// the reply header, then type, state and path), ok false when f is short.
func eventFields(f []byte) (typ int32, path string, ok bool) {
	if len(f) < 32 {
		return 0, "", false
	}
	typ = int32(binary.BigEndian.Uint32(f[20:24]))
	n := int(int32(binary.BigEndian.Uint32(f[28:32])))
	if n < 0 || len(f) < 32+n {
		return 0, "", false
	}
	return typ, string(f[32 : 32+n]), true
}

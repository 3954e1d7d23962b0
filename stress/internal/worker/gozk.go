package worker

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/stress/internal/proto"
)

// gozkImpl is the baseline that tierlock replaces: go-zookeeper's zk.Lock,
// one per goroutine and path, all on one connection per process. Every
// waiting goroutine puts its own node and watch on ZooKeeper.
type gozkImpl struct {
	conn  *zk.Conn
	paths []string
	drain sync.WaitGroup
}

func newGozkImpl(ctx context.Context, task proto.Task) (*gozkImpl, error) {
	conn, events, err := zk.Connect(task.Servers, task.SessionTimeout,
		zk.WithLogInfo(false), zk.WithLogger(discardLogger{}), zk.WithDialer(tally.Dialer()))
	if err != nil {
		return nil, err
	}
	im := &gozkImpl{conn: conn, paths: task.Paths}
	// go-zookeeper panics when its event channel fills: read it until the
	// connection closes, noting the first session.
	ready := make(chan struct{})
	im.drain.Add(1)
	go func() {
		defer im.drain.Done()
		once := sync.Once{}
		for ev := range events {
			if ev.State == zk.StateHasSession {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
		return im, nil
	case <-ctx.Done():
		im.close()
		return nil, fmt.Errorf("connect to %v: %w", task.Servers, ctx.Err())
	}
}

func (im *gozkImpl) tokenKind() string {
	if _, ok := gozkSeq(zk.NewLock(nil, "/", nil)); ok {
		return "seq"
	}
	return ""
}

func (im *gozkImpl) holder(int) holder {
	return &gozkHolder{im: im, locks: make([]*zk.Lock, len(im.paths))}
}

func (im *gozkImpl) close() error {
	im.conn.Close()
	im.drain.Wait()
	return nil
}

type gozkHolder struct {
	im    *gozkImpl
	locks []*zk.Lock
}

// acquire cannot be abandoned: zk.Lock.Lock takes no context. At the end of
// a timed run, goroutines still queued get the lock in turn and release it.
func (h *gozkHolder) acquire(_ context.Context, p int) (int64, error) {
	if h.locks[p] == nil {
		h.locks[p] = zk.NewLock(h.im.conn, h.im.paths[p], zk.WorldACL(zk.PermAll))
	}
	if err := h.locks[p].Lock(); err != nil {
		return 0, err
	}
	seq, _ := gozkSeq(h.locks[p])
	return seq, nil
}

func (h *gozkHolder) release(p int) error { return h.locks[p].Unlock() }

// lost: zk.Lock does not notice that its hold was lost.
func (h *gozkHolder) lost(int) (<-chan struct{}, func() error) { return nil, nil }

// gozkSeq returns a token for a held zk.Lock: its node's sequence number
// plus one. zk.Lock exposes neither its node nor the node's czxid, and
// reading the czxid would cost a request inside the critical section, so
// the sequence number is read from the lock's unexported field (reading an
// unexported field through reflect is allowed; nothing is written). Within
// one lock path it orders holders exactly as the czxid does, which is all
// the checker compares. ok is false if go-zookeeper changes the field.
func gozkSeq(l *zk.Lock) (token int64, ok bool) {
	f := reflect.ValueOf(l).Elem().FieldByName("seq")
	if !f.IsValid() || f.Kind() != reflect.Int {
		return 0, false
	}
	return f.Int() + 1, true
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

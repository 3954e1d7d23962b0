package main

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// impl is one lock implementation inside a worker process.
type impl interface {
	// holder returns the handle goroutine g acquires through.
	holder(g int) holder
	// tokenKind names what the fencing tokens are ("" when there are none).
	tokenKind() string
	// close releases everything and closes the connection.
	close() error
}

// holder acquires and releases lock paths for one goroutine. A goroutine
// holds at most one path at a time.
type holder interface {
	// acquire blocks until path p is held and returns the hold's token.
	acquire(ctx context.Context, p int) (token int64, err error)
	release(p int) error
	// lost returns, while path p is held, a channel that closes when the
	// hold is lost and a function that tells why; a nil channel when the
	// implementation cannot tell.
	lost(p int) (<-chan struct{}, func() error)
}

// sessionEvents counts the worker's ZooKeeper session troubles (tier and
// zklock: the session's state listener), reported with its result.
var sessionEvents struct{ disconnects, expiries atomic.Int64 }

func countSessionEvents(st zklock.State) {
	switch st {
	case zklock.StateDisconnected:
		sessionEvents.disconnects.Add(1)
	case zklock.StateExpired:
		sessionEvents.expiries.Add(1)
		if floodSlowListener.Load() {
			// During a flood the application's listener takes its time over
			// the expiry, as one that logs to a slow sink or takes a lock
			// of its own would: the events behind it pile up.
			time.Sleep(floodListenerDelay)
		}
	}
}

// newImpl connects to ZooKeeper and makes the locks of impl spec.Impl.
func newImpl(ctx context.Context, spec workerSpec, log *slog.Logger) (impl, error) {
	switch spec.Impl {
	case implTier, implTierHandoff, implZklock:
		s, err := zklock.Connect(ctx, spec.Servers,
			zklock.WithSessionTimeout(spec.SessionTimeout), zklock.WithLogger(log),
			zklock.WithStateListener(countSessionEvents))
		if err != nil {
			return nil, err
		}
		var im impl
		if spec.Impl == implZklock {
			im, err = newZklockImpl(s, spec.Paths, spec.Proc)
		} else {
			im, err = newTierImpl(s, spec, log)
		}
		if err != nil {
			s.Close()
			return nil, err
		}
		return im, nil
	case implGozk:
		return newGozkImpl(ctx, spec)
	case implZkcompat:
		return newZkcompatImpl(ctx, spec)
	case implCurator, implKazoo:
		return newPeerImpl(ctx, spec)
	case implNolock:
		return nolockImpl{}, nil
	}
	return nil, fmt.Errorf("unknown implementation %q", spec.Impl)
}

// zklockImpl shares one zklock.Lock per path among the goroutines of the
// process through a sync.Mutex: the straightforward way to put a
// process-level lock in front of many goroutines, with no cancellation of
// the local wait and no hand-off.
type zklockImpl struct {
	s     *zklock.Session
	locks []*zklock.Lock
	mus   []sync.Mutex
}

func newZklockImpl(s *zklock.Session, paths []string, proc int) (*zklockImpl, error) {
	im := &zklockImpl{s: s, mus: make([]sync.Mutex, len(paths))}
	for _, p := range paths {
		l, err := zklock.New(s, p, zklock.WithLabel(fmt.Sprintf("stress worker %d", proc)))
		if err != nil {
			return nil, err
		}
		im.locks = append(im.locks, l)
	}
	return im, nil
}

func (im *zklockImpl) holder(int) holder        { return im }
func (im *zklockImpl) session() *zklock.Session { return im.s }
func (im *zklockImpl) tokenKind() string        { return "zxid" }
func (im *zklockImpl) acquire(ctx context.Context, p int) (int64, error) {
	im.mus[p].Lock()
	if err := ctx.Err(); err != nil {
		// The run ended while this goroutine waited for the mutex. (zklock
		// would create and delete a node for an Acquire on an ended ctx.)
		im.mus[p].Unlock()
		return 0, err
	}
	if err := im.locks[p].Acquire(ctx); err != nil {
		im.mus[p].Unlock()
		return 0, err
	}
	return im.locks[p].Token(), nil
}

func (im *zklockImpl) lost(p int) (<-chan struct{}, func() error) {
	return im.locks[p].Lost(), im.locks[p].Err
}

func (im *zklockImpl) release(p int) error {
	defer im.mus[p].Unlock()
	return im.locks[p].Release(context.Background())
}

func (im *zklockImpl) close() error {
	for _, l := range im.locks {
		l.Close()
	}
	return im.s.Close()
}

// gozkImpl is the baseline that tierlock replaces: go-zookeeper's zk.Lock,
// one per goroutine and path, all on one connection per process. Every
// waiting goroutine puts its own node and watch on ZooKeeper.
type gozkImpl struct {
	conn  *zk.Conn
	paths []string
	drain sync.WaitGroup
}

func newGozkImpl(ctx context.Context, spec workerSpec) (*gozkImpl, error) {
	conn, events, err := zk.Connect(spec.Servers, spec.SessionTimeout,
		zk.WithLogInfo(false), zk.WithLogger(discardLogger{}))
	if err != nil {
		return nil, err
	}
	im := &gozkImpl{conn: conn, paths: spec.Paths}
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
		return nil, fmt.Errorf("connect to %v: %w", spec.Servers, ctx.Err())
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

// spin busy-works for d, or until stop closes.
func spin(d time.Duration, stop <-chan struct{}) {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for range 64 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if stop != nil {
			select {
			case <-stop:
				sink = x
				return
			default:
			}
		}
	}
	sink = x
}

var sink uint64

// nolockImpl excludes nothing. Running it must make the checker report
// overlaps: it shows that a passing run means something.
type nolockImpl struct{}

func (nolockImpl) holder(int) holder                           { return nolockImpl{} }
func (nolockImpl) tokenKind() string                           { return "" }
func (nolockImpl) close() error                                { return nil }
func (nolockImpl) acquire(context.Context, int) (int64, error) { return 0, nil }
func (nolockImpl) release(int) error                           { return nil }
func (nolockImpl) lost(int) (<-chan struct{}, func() error)    { return nil, nil }

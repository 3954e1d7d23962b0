package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zkcompat"
	"github.com/tierlock/tierlock/zklock"
)

// A Go member of a fleet: the test binary run again with a childSpec.

// childSpec tells a Go member what to do.
type childSpec struct {
	Family     string   `json:"family"`
	Servers    []string `json:"servers"`
	Path       string   `json:"path"`
	Goroutines int      `json:"goroutines"`
	End        int64    `json:"end"` // unix ms: stop acquiring; 0: wait at the start barrier (startBarrier)
	File       string   `json:"file"`
	Label      string   `json:"label"`
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// childMain is a Go member: its goroutines acquire and release until
// spec.End, appending "E <label> <pid> <goroutine>" after each acquisition
// and "X ..." before each release to the shared file, one write(2) each on
// an O_APPEND descriptor, and print "holds <n>" at the end.
func childMain(specJSON string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "bad", childEnv, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f, err := os.OpenFile(spec.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	lockers, closeAll, err := goMember(ctx, spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, spec.Family, err)
		return 1
	}
	if spec.End, err = startBarrier(ctx, spec.End, spec.File, spec.Label); err != nil {
		fmt.Fprintln(os.Stderr, spec.Family, err)
		return 1
	}
	pid := os.Getpid()
	var holds atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, spec.Goroutines)
	for g := range spec.Goroutines {
		lock, unlock := lockers(g)
		enter := []byte(fmt.Sprintf("E %s %d %d\n", spec.Label, pid, g))
		exit := []byte(fmt.Sprintf("X %s %d %d\n", spec.Label, pid, g))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().UnixMilli() < spec.End {
				if err := lock(ctx); err != nil {
					errs <- fmt.Errorf("lock: %w", err)
					return
				}
				_, _ = f.Write(enter)
				time.Sleep(holdMicros * time.Microsecond)
				_, _ = f.Write(exit)
				if err := unlock(); err != nil {
					errs <- fmt.Errorf("unlock: %w", err)
					return
				}
				holds.Add(1)
			}
		}()
	}
	wg.Wait()
	closeAll()
	close(errs)
	for err := range errs {
		fmt.Fprintln(os.Stderr, spec.Family, err)
		return 1
	}
	fmt.Printf("holds %d\n", holds.Load())
	return 0
}

// goMember connects a Go member and returns, per goroutine, its lock and
// unlock, and what closes everything.
func goMember(ctx context.Context, spec childSpec) (func(g int) (func(context.Context) error, func() error), func(), error) {
	switch spec.Family {
	case famTier, famTierHandoff:
		s, err := zklock.Connect(ctx, spec.Servers, zklock.WithLogger(quiet))
		if err != nil {
			return nil, nil, err
		}
		var opts []tier.Option
		if spec.Family == famTierHandoff {
			opts = append(opts, tier.WithHandoff(64, 50*time.Millisecond))
		}
		l, err := tier.New(s, spec.Path, opts...)
		if err != nil {
			s.Close()
			return nil, nil, err
		}
		return func(int) (func(context.Context) error, func() error) {
				var held context.Context
				return func(ctx context.Context) (err error) {
						held, err = l.Acquire(ctx)
						return err
					}, func() error {
						return l.Release(held)
					}
			}, func() {
				l.Close()
				s.Close()
			}, nil
	case famGozk, famZkcompat:
		conn, events, err := zk.Connect(spec.Servers, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(discard{}))
		if err != nil {
			return nil, nil, err
		}
		go func() {
			for range events { // go-zookeeper drops events nobody reads; read them anyway
			}
		}()
		acl := zk.WorldACL(zk.PermAll)
		if spec.Family == famZkcompat {
			if err := firstLock(ctx, conn, spec.Path, acl); err != nil {
				zkcompat.CloseConn(conn)
				conn.Close()
				return nil, nil, err
			}
		}
		return func(int) (func(context.Context) error, func() error) {
				if spec.Family == famGozk {
					l := zk.NewLock(conn, spec.Path, acl)
					return func(context.Context) error { return l.Lock() }, l.Unlock
				}
				l := zkcompat.NewLock(conn, spec.Path, acl)
				return l.LockContext, l.Unlock
			}, func() {
				zkcompat.CloseConn(conn)
				conn.Close()
			}, nil
	}
	return nil, nil, fmt.Errorf("unknown Go family %q", spec.Family)
}

// firstLock locks path once with the drop-in. Its session cannot see the
// connection's handshake, so its first lock waits about 5/8 of a tick for
// its first lease (docs/lease.md, "The cost"), queueing the fleet behind
// it: a member locks once before the start barrier, as a process that has
// been running would have.
func firstLock(ctx context.Context, conn *zk.Conn, path string, acl []zk.ACL) error {
	l := zkcompat.NewLock(conn, path, acl)
	if err := l.LockContext(ctx); err != nil {
		return err
	}
	return l.Unlock()
}

type discard struct{}

func (discard) Printf(string, ...any) {}

package gocronlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// TestBadInput: bad input gets an error value, never a panic.
func TestBadInput(t *testing.T) {
	s := zktest.Connect(t, zktest.Servers(t))
	root := zktest.Path(t)
	newLocker := func(s *zklock.Session, root string, opts ...runonce.Option) func() error {
		return func() error {
			l, err := gocronlock.NewLocker(s, root, opts...)
			if l != nil {
				l.Close()
			}
			return err
		}
	}
	newElector := func(s *zklock.Session, path string, opts ...gocronlock.ElectorOption) func() error {
		return func() error {
			e, err := gocronlock.NewElector(s, path, opts...)
			if e != nil {
				e.Close()
			}
			return err
		}
	}
	var nilLocker *gocronlock.Locker
	var nilElector *gocronlock.Elector
	var nilCtx context.Context
	closed, err := gocronlock.NewLocker(s, root)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	live, err := gocronlock.NewLocker(s, root)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	longRoot, err := gocronlock.NewLocker(s, root+"/"+strings.Repeat("r", 1000))
	if err != nil {
		t.Fatal(err)
	}
	defer longRoot.Close()
	ctx := zktest.Context(t, 10*time.Second)
	lockCall := func(l *gocronlock.Locker, ctx context.Context, key string) func() error {
		return func() error { _, err := l.Lock(ctx, key); return err }
	}
	for _, c := range []struct {
		name string
		call func() error
		want error
	}{
		{"NewLocker nil session", newLocker(nil, root), zklock.ErrNilSession},
		{"NewLocker empty root", newLocker(s, ""), zklock.ErrInvalidPath},
		{"NewLocker relative root", newLocker(s, "jobs"), zklock.ErrInvalidPath},
		{"NewLocker trailing slash", newLocker(s, "/jobs/"), zklock.ErrInvalidPath},
		{"WithWindow 0", newLocker(s, root, runonce.WithWindow(0)), runonce.ErrInvalidOption},
		{"WithJobWindow negative", newLocker(s, root, runonce.WithJobWindow("a", -time.Second)), runonce.ErrInvalidOption},
		{"WithJobWindow empty job", newLocker(s, root, runonce.WithJobWindow("", time.Second)), runonce.ErrInvalidOption},
		{"WithLockTimeout 0", newLocker(s, root, runonce.WithLockTimeout(0)), runonce.ErrInvalidOption},
		{"WithACL empty", newLocker(s, root, runonce.WithACL(nil)), runonce.ErrInvalidOption},
		{"nil LockerOption", newLocker(s, root, nil), nil},
		{"Lock nil context", lockCall(live, nilCtx, "job"), zklock.ErrNilContext},
		{"Lock empty key", lockCall(live, ctx, ""), runonce.ErrInvalidKey},
		{"Lock long key", lockCall(live, ctx, strings.Repeat("k", runonce.MaxKeyLen+1)), runonce.ErrInvalidKey},
		// Issue 37, item 8: within MaxKeyLen, but escaping triples it past
		// ZooKeeper's path limit below a long root.
		{"Lock key too long once escaped", lockCall(longRoot, ctx, strings.Repeat("/", runonce.MaxKeyLen)), runonce.ErrInvalidKey},
		{"LastRun key too long once escaped", func() error {
			_, err := longRoot.LastRun(ctx, strings.Repeat("/", runonce.MaxKeyLen))
			return err
		}, runonce.ErrInvalidKey},
		{"Lock after Close", lockCall(closed, ctx, "job"), runonce.ErrClosed},
		{"Lock nil Locker", lockCall(nilLocker, ctx, "job"), runonce.ErrNil},
		{"LastRun nil Locker", func() error { _, err := nilLocker.LastRun(ctx, "job"); return err }, runonce.ErrNil},
		{"LastRun nil context", func() error { _, err := live.LastRun(nilCtx, "job"); return err }, zklock.ErrNilContext},
		{"LastRun empty key", func() error { _, err := live.LastRun(ctx, ""); return err }, runonce.ErrInvalidKey},
		{"LastRun never ran", func() error { _, err := live.LastRun(ctx, "never"); return err }, nil},
		{"Close nil Locker", nilLocker.Close, runonce.ErrNil},
		{"Close twice", closed.Close, nil},
		{"NewElector nil session", newElector(nil, root), zklock.ErrNilSession},
		{"NewElector bad path", newElector(s, "election"), zklock.ErrInvalidPath},
		{"WithRetryInterval 0", newElector(s, root+"/e", gocronlock.WithRetryInterval(0)), runonce.ErrInvalidOption},
		{"nil ElectorOption", newElector(s, root+"/e", nil), nil},
		// Issue 37, item 7: a value over ZooKeeper's node data limit is
		// refused here, not campaigned with for ever.
		{"WithCandidate over 64 KiB", newElector(s, root+"/e", gocronlock.WithCandidate(strings.Repeat("v", 65<<10))), runonce.ErrInvalidOption},
		{"IsLeader nil Elector", func() error { return nilElector.IsLeader(ctx) }, runonce.ErrNil},
		{"Leader nil Elector", func() error { _, err := nilElector.Leader(ctx); return err }, runonce.ErrNil},
		{"Close nil Elector", nilElector.Close, runonce.ErrNil},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := zktest.NoPanic(t, c.call)
			switch {
			case c.want == nil && err != nil:
				t.Errorf("error %v, want none", err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Errorf("error %v, want %v", err, c.want)
			}
		})
	}
	if at, _ := live.LastRun(ctx, "never"); !at.At.IsZero() || at.By != "" {
		t.Errorf("LastRun of a job that never ran: %v, want the zero time", at)
	}
}

package runonce_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// TestBadInput: bad input gets an error value, never a panic; nil
// receivers never panic.
func TestBadInput(t *testing.T) {
	s := zktest.Connect(t, zktest.Servers(t))
	root := zktest.Path(t)
	newRunner := func(s *zklock.Session, root string, opts ...runonce.Option) func() error {
		return func() error {
			r, err := runonce.New(s, root, opts...)
			if r != nil {
				r.Close()
			}
			return err
		}
	}
	var nilRunner *runonce.Runner
	var nilClaim *runonce.Claim
	var nilCtx context.Context
	closed, err := runonce.New(s, root)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	live, err := runonce.New(s, root)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	longRoot, err := runonce.New(s, root+"/"+strings.Repeat("r", 1000))
	if err != nil {
		t.Fatal(err)
	}
	defer longRoot.Close()
	ctx := zktest.Context(t, 10*time.Second)
	claim := func(r *runonce.Runner, ctx context.Context, key string) func() error {
		return func() error { _, err := r.Claim(ctx, key); return err }
	}
	nop := func(context.Context) error { return nil }
	for _, c := range []struct {
		name string
		call func() error
		want error
	}{
		{"New nil session", newRunner(nil, root), zklock.ErrNilSession},
		{"New relative root", newRunner(s, "jobs"), zklock.ErrInvalidPath},
		{"WithWindow 0", newRunner(s, root, runonce.WithWindow(0)), runonce.ErrInvalidOption},
		{"WithJobWindow empty job", newRunner(s, root, runonce.WithJobWindow("", time.Second)), runonce.ErrInvalidOption},
		{"WithLockTimeout negative", newRunner(s, root, runonce.WithLockTimeout(-time.Second)), runonce.ErrInvalidOption},
		{"WithACL empty", newRunner(s, root, runonce.WithACL(nil)), runonce.ErrInvalidOption},
		{"WithObserver nil", newRunner(s, root, runonce.WithObserver(nil)), runonce.ErrInvalidOption},
		{"WithInstanceName empty", newRunner(s, root, runonce.WithInstanceName("")), runonce.ErrInvalidOption},
		{"WithLogger nil", newRunner(s, root, runonce.WithLogger(nil)), runonce.ErrInvalidOption},
		{"nil Option", newRunner(s, root, nil), nil},
		{"Claim nil context", claim(live, nilCtx, "job"), zklock.ErrNilContext},
		{"Claim empty key", claim(live, ctx, ""), runonce.ErrInvalidKey},
		{"Claim long key", claim(live, ctx, strings.Repeat("k", runonce.MaxKeyLen+1)), runonce.ErrInvalidKey},
		{"Claim key too long once escaped", claim(longRoot, ctx, strings.Repeat("/", runonce.MaxKeyLen)), runonce.ErrInvalidKey},
		{"Claim after Close", claim(closed, ctx, "job"), runonce.ErrClosed},
		{"Claim nil Runner", claim(nilRunner, ctx, "job"), runonce.ErrNil},
		{"Do nil func", func() error { return live.Do(ctx, "job", nil) }, runonce.ErrNil},
		{"Do nil Runner", func() error { return nilRunner.Do(ctx, "job", nop) }, runonce.ErrNil},
		{"LastRun nil Runner", func() error { _, err := nilRunner.LastRun(ctx, "job"); return err }, runonce.ErrNil},
		{"LastRun nil context", func() error { _, err := live.LastRun(nilCtx, "job"); return err }, zklock.ErrNilContext},
		{"LastRun never ran", func() error { _, err := live.LastRun(ctx, "never"); return err }, nil},
		{"RemoveJob nil Runner", func() error { return nilRunner.RemoveJob(ctx, "job") }, runonce.ErrNil},
		{"RemoveJob empty key", func() error { return live.RemoveJob(ctx, "") }, runonce.ErrInvalidKey},
		{"RemoveJob after Close", func() error { return closed.RemoveJob(ctx, "job") }, runonce.ErrClosed},
		{"Release nil Claim", nilClaim.Release, runonce.ErrNil},
		{"Context nil Claim", func() error { return context.Cause(nilClaim.Context()) }, zklock.ErrNotHeld},
		{"RunContext nil Runner", func() error { return context.Cause(nilRunner.RunContext("job")) }, zklock.ErrNotHeld},
		{"Observe nil Runner", func() error { nilRunner.Observe(runonce.Event{}); return nil }, nil},
		{"Close nil Runner", nilRunner.Close, runonce.ErrNil},
		{"Close twice", closed.Close, nil},
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
	if runonce.Outcome(99).String() != "Outcome(99)" {
		t.Errorf("an outcome out of range: %q, want Outcome(99)", runonce.Outcome(99).String())
	}
}

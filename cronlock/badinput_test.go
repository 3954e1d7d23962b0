package cronlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/tierlock/tierlock/cronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// TestBadInput: bad input gets an error value, never a panic; a nil
// Locker's methods return errors, and its wrappers make jobs that never
// run.
func TestBadInput(t *testing.T) {
	s := zktest.Connect(t, zktest.Servers(t))
	var nilLocker *cronlock.Locker
	ctx := zktest.Context(t, 10*time.Second)
	ran := false
	job := cron.FuncJob(func() { ran = true })
	for _, c := range []struct {
		name string
		call func() error
		want error
	}{
		{"New nil session", func() error { _, err := cronlock.New(nil, "/x"); return err }, zklock.ErrNilSession},
		{"New relative root", func() error { _, err := cronlock.New(s, "x"); return err }, zklock.ErrInvalidPath},
		{"New bad option", func() error { _, err := cronlock.New(s, "/x", runonce.WithWindow(0)); return err }, runonce.ErrInvalidOption},
		{"LastRun nil Locker", func() error { _, err := nilLocker.LastRun(ctx, "job"); return err }, runonce.ErrNil},
		{"RemoveJob nil Locker", func() error { return nilLocker.RemoveJob(ctx, "job") }, runonce.ErrNil},
		{"RunContext nil Locker", func() error { return context.Cause(nilLocker.RunContext("job")) }, zklock.ErrNotHeld},
		{"Close nil Locker", nilLocker.Close, runonce.ErrNil},
		{"Wrapper nil Locker", func() error { nilLocker.Wrapper()(cronlock.Named("job", job)).Run(); return nil }, nil},
		{"Wrap nil Locker", func() error { nilLocker.Wrap("job")(job).Run(); return nil }, nil},
		{"Wrap zero Locker", func() error { (&cronlock.Locker{}).Wrap("job")(job).Run(); return nil }, nil},
		{"Named nil job", func() error { cronlock.Named("job", nil).Run(); return nil }, nil},
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
	if ran {
		t.Error("a nil Locker's wrapper ran its job")
	}
}

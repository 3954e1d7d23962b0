package tier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// Bad input to the read/write lock and the semaphore: errors.Is-able
// errors, never a panic, nothing held.
func TestRWSemBadInput(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	path := zktest.Path(t)
	rw := newRW(t, s, path+"/rw")
	sem := newSem(t, s, path+"/sem", 2)
	var nilRW *tier.RWLock
	var nilSem *tier.Semaphore
	ctx := ctxT(t, 10*time.Second)
	//lint:ignore SA1012 a nil context is the bad input under test
	var nilCtx context.Context
	foreign := context.WithValue(ctx, struct{}{}, 1)
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"new rw nil session", func() error { _, err := tier.NewRWLock(nil, "/x"); return err }, zklock.ErrNilSession},
		{"new rw bad path", func() error { _, err := tier.NewRWLock(s, "x/"); return err }, tier.ErrInvalidPath},
		{"new sem nil session", func() error { _, err := tier.NewSemaphore(nil, "/x", 1); return err }, zklock.ErrNilSession},
		{"new sem zero leases", func() error { _, err := tier.NewSemaphore(s, "/x", 0); return err }, tier.ErrInvalidOption},
		{"new sem bad path", func() error { _, err := tier.NewSemaphore(s, "/zookeeper/x", 1); return err }, tier.ErrInvalidPath},
		{"nil rw rlock", func() error { _, err := nilRW.RLock(ctx); return err }, tier.ErrNil},
		{"rlock nil ctx", func() error { _, err := rw.RLock(nilCtx); return err }, tier.ErrNilContext},
		{"lock nil ctx", func() error { _, err := rw.Lock(nilCtx); return err }, tier.ErrNilContext},
		{"runlock foreign", func() error { return rw.Release(foreign) }, tier.ErrNotHolder},
		{"unlock foreign", func() error { return rw.Release(foreign) }, tier.ErrNotHolder},
		{"runlock nil", func() error { return rw.Release(nilCtx) }, tier.ErrNilContext},
		{"token foreign", func() error { _, err := rw.Token(foreign); return err }, tier.ErrNotHolder},
		{"rlock cancelled", func() error { _, err := rw.RLock(zktest.Cancelled()); return err }, context.Canceled},
		{"nil sem acquire", func() error { _, err := nilSem.Acquire(ctx, 1); return err }, tier.ErrNil},
		{"sem nil ctx", func() error { _, err := sem.Acquire(nilCtx, 1); return err }, tier.ErrNilContext},
		{"sem zero permits", func() error { _, err := sem.Acquire(ctx, 0); return err }, tier.ErrInvalidPermits},
		{"sem too many permits", func() error { _, err := sem.Acquire(ctx, 3); return err }, tier.ErrInvalidPermits},
		{"sem try too many", func() error { _, _, err := sem.TryAcquire(ctx, -1); return err }, tier.ErrInvalidPermits},
		{"sem release foreign", func() error { return sem.Release(foreign) }, tier.ErrNotHolder},
		{"sem release nil", func() error { return sem.Release(nilCtx) }, tier.ErrNilContext},
		{"sem cancelled", func() error { _, err := sem.Acquire(zktest.Cancelled(), 1); return err }, context.Canceled},
		{"rw registry bad key", func() error {
			r, _ := tier.NewRWRegistry(s, path+"/reg")
			defer r.Close()
			_, err := r.Lock(ctx, "..")
			return err
		}, tier.ErrInvalidPath},
		{"sem registry zero", func() error { _, err := tier.NewSemaphoreRegistry(s, path, 0); return err }, tier.ErrInvalidOption},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := zktest.NoPanic(t, c.call)
			if !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
		})
	}
	if rw.Readers() != 0 || sem.InUse() != 0 {
		t.Errorf("bad input left holds: %d readers, %d permits", rw.Readers(), sem.InUse())
	}
	// Closed: later calls say so.
	rw.Close()
	sem.Close()
	if _, err := rw.RLock(ctx); !errors.Is(err, tier.ErrClosed) {
		t.Errorf("RLock after Close: %v", err)
	}
	if _, err := sem.Acquire(ctx, 1); !errors.Is(err, tier.ErrClosed) {
		t.Errorf("Acquire after Close: %v", err)
	}
}

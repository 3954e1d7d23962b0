package fleet

import (
	"context"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/tierlock/tierlock/cronlock"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// tierlock: cronlock's wrapper, each tick of each job once across the
// fleet, decided by the ZooKeeper server's clock against the job's window
// (package runonce), on a session of the instance's own.
func init() {
	Register("tierlock", Variant{Backend: ZooKeeper, Expect: OncePerTick, Open: openTierlock})
}

// openTierlock connects to ZooKeeper and makes the instance's Locker at
// the fleet's root, with the default window (500 ms: the fleet's timers
// are 300 ms apart, its ticks 1 s or more) but for the jobs given one,
// attached to the instance's Cron (its fires' ticks: stale ones are
// skipped), its observer writing each fire's outcome.
func openTierlock(ctx context.Context, c Config) (Lock, error) {
	sopts := []zklock.SessionOption{zklock.WithLogger(c.Logger)}
	if c.SessionTimeout > 0 {
		sopts = append(sopts, zklock.WithSessionTimeout(c.SessionTimeout))
	}
	s, err := zklock.Connect(ctx, c.Servers, sopts...)
	if err != nil {
		return Lock{}, err
	}
	opts := []runonce.Option{runonce.WithInstanceName(c.Instance), runonce.WithLogger(c.Logger)}
	if c.Window > 0 {
		opts = append(opts, runonce.WithWindow(c.Window))
	}
	if c.LockTimeout > 0 {
		opts = append(opts, runonce.WithLockTimeout(c.LockTimeout))
	}
	for name, w := range c.Windows {
		opts = append(opts, runonce.WithJobWindow(name, w))
	}
	if c.Observe != nil {
		opts = append(opts, runonce.WithObserver(func(e runonce.Event) { c.Observe(e.Job, e.Outcome.String(), e.Tick) }))
	}
	l, err := cronlock.New(s, c.Root, opts...)
	if err != nil {
		_ = s.Close()
		return Lock{}, err
	}
	return Lock{
		Wrap:   func(name string, job cron.Job) cron.Job { return l.Wrap(name)(job) },
		Attach: l.Attach,
		Chain:  l.WithChain,
		Named:  cronlock.Named,
		RunTick: func(name string) (time.Time, bool) {
			return runonce.TickOf(l.RunContext(name))
		},
		Close: func() error {
			err := l.Close()
			_ = s.Close()
			return err
		},
	}, nil
}

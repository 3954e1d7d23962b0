package fleet

import (
	"context"

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
// are 300 ms apart, its ticks 1 s or more).
func openTierlock(ctx context.Context, c Config) (Lock, error) {
	s, err := zklock.Connect(ctx, c.Servers, zklock.WithLogger(c.Logger))
	if err != nil {
		return Lock{}, err
	}
	l, err := cronlock.New(s, c.Root, runonce.WithInstanceName(c.Instance), runonce.WithLogger(c.Logger))
	if err != nil {
		_ = s.Close()
		return Lock{}, err
	}
	return Lock{
		Wrap: func(name string, job cron.Job) cron.Job { return l.Wrap(name)(job) },
		Close: func() error {
			err := l.Close()
			_ = s.Close()
			return err
		},
	}, nil
}

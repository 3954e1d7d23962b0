package cronlock_test

import (
	"github.com/robfig/cron/v3"

	"github.com/tierlock/tierlock/cronlock"
)

// attach lets l read c's ticks (Locker.Attach).
func attach(l *cronlock.Locker, c *cron.Cron) { l.Attach(c) }

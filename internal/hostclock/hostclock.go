// Package hostclock is the offset of this process's clock from its host's,
// as package runonce names a scheduler's ticks: zero, but in the cron
// fleets' instances that a test runs with a clock off the others'
// (cronlock/internal/fleet, gocronlock/internal/fleet). Go reads the wall
// clock through the vDSO, which libfaketime's preload cannot reach, so an
// instance's clock cannot be moved from outside its process.
//
// A host whose clock reads d ahead fires a tick named T at the moment the
// others' clocks read T-d: its scheduler names the tick T, and measures
// its lateness on its own clock. A fleet instance plays it with its
// schedules shifted by -d (its timers fire at the others' T-d, the tick's
// time as its scheduler reads it) and SetOffset(d): runonce names the tick
// T, and measures its lateness, a difference of two readings of one clock,
// unchanged. Nothing else in runonce reads the wall clock but as such a
// difference.
package hostclock

import (
	"sync/atomic"
	"time"
)

var offset atomic.Int64

// SetOffset sets the offset, for the whole process: a fleet instance's
// start-up, before any tick.
func SetOffset(d time.Duration) { offset.Store(int64(d)) }

// Offset returns the offset: zero unless SetOffset said otherwise.
func Offset() time.Duration { return time.Duration(offset.Load()) }

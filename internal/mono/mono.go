// Package mono is the one clock the lease's argument reads: the process's
// monotonic clock, kept as an int64 where a time must be stored in an
// atomic or a ring.
//
// A time.Time from time.Now carries a monotonic reading, and Go compares
// and subtracts two such times by it; a time rebuilt from unix nanoseconds
// (time.Unix) carries none, and is compared by the wall clock, which an NTP
// step, a resumed VM or an operator's date moves by any amount. So a time
// is stored as its distance from the package's epoch on the monotonic
// clock (Of), and rebuilt from the epoch (Time.Std), which gives it a
// monotonic reading again: every comparison and duration the lease makes
// runs on one monotonic clock (TestStdKeepsTheMonotonicClock).
//
// The same clock measures the process's stalls (stall.go): a goroutine,
// while any Watch is on, finds the clock jumped when the process was
// stopped, and StallIn says when and for how long.
package mono

import (
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/internal/mutant"
)

// epoch is the instant the stored times count from.
var epoch = time.Now()

// Time is an instant on the monotonic clock: nanoseconds since the epoch,
// plus base. Zero is never a reading, so the stores that keep zero for
// "none" can.
type Time int64

// base keeps every reading positive: a synctest bubble's clock, which the
// lease's explorer runs on, starts in 2000, 26 years before the epoch, and
// 2^62 ns is 146 years.
const base = 1 << 62

// Now is the monotonic clock's reading now. It is read with time.Since,
// which reads the monotonic clock alone (time.Now reads the wall clock
// too): every question asked of a hold reads it (session.Member.Vouch),
// and that halves the question's cost (BenchmarkNow). Inside a synctest
// bubble, Since reads the bubble's clock as Now would.
func Now() Time {
	if mutant.On(mutant.WallClock) {
		return Of(time.Now()) + Time(jumped.Load())
	}
	return Time(time.Since(epoch)) + base + Time(jumped.Load())
}

// Of is t's reading on the monotonic clock, for t taken from time.Now (or
// derived from one by Add): its distance from the epoch by the monotonic
// readings of both.
func Of(t time.Time) Time {
	if mutant.On(mutant.WallClock) {
		return Time(t.UnixNano() + wallStep.Load()) // seeded bug: the wall clock, as read then
	}
	return Time(t.Sub(epoch)) + base
}

// Std is t as a time.Time with a monotonic reading.
func (t Time) Std() time.Time {
	if mutant.On(mutant.WallClock) {
		return time.Unix(0, int64(t)-wallStep.Load()) // seeded bug: read against the wall clock now
	}
	return epoch.Add(time.Duration(t - base))
}

// wallStep is how far a test's world has stepped the wall clock (ns),
// which only a lease on the wall clock (mutant.WallClock) can see: the
// lease's explorer steps it, and the correct code moves nothing.
var wallStep atomic.Int64

// StepWall steps the wall clock by d as the seeded bug WallClock reads
// it, and returns the function that steps it back. A test seam: a real
// step cannot be made inside a test, and the monotonic clock, which the
// lease reads, does not move with one.
func StepWall(d time.Duration) (back func()) {
	wallStep.Add(int64(d))
	return func() { wallStep.Add(-int64(d)) }
}

// jumped is how far a test has jumped the clock Now reads (ns).
var jumped atomic.Int64

// Jump moves the clock Now reads on by d, as a process resumed from a stop
// of d finds it before any of its timers ran, and returns the function that
// ends the jump. A test seam: a stop of the test's own process cannot be
// made, and the runtime's timers, which do not see the jump, stand for the
// timers a resumed process has not run yet. The stall watch measures the
// jump as a stall; its end forgets the stalls measured, and the watch's
// last reading is taken again, so that the step back is no stall.
func Jump(d time.Duration) (back func()) {
	jumped.Add(int64(d))
	return func() {
		jumped.Add(-int64(d))
		if watch.last.Load() != 0 {
			watch.last.Store(int64(Now()))
		}
		forgetStalls()
	}
}

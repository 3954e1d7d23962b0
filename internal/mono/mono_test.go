package mono

import (
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/mutant"
)

// hasMonotonic reports whether t carries a monotonic clock reading, which
// its String shows as "m=±<seconds>" (time package documentation).
func hasMonotonic(t time.Time) bool { return strings.Contains(t.String(), " m=") }

// A time stored by Of and rebuilt by Std is the same instant and carries a
// monotonic reading, so that comparing it with time.Now runs on the
// monotonic clock. One rebuilt from unix nanoseconds, as the lease's times
// were before, carries none and is compared by the wall clock.
func TestStdKeepsTheMonotonicClock(t *testing.T) {
	if mutant.On(mutant.WallClock) {
		t.Skip("the seeded bug keeps the wall clock")
	}
	now := time.Now()
	back := Of(now).Std()
	if !back.Equal(now) || !hasMonotonic(back) {
		t.Fatalf("Of(now).Std() = %v, want %v with a monotonic reading", back, now)
	}
	if later := Of(now.Add(time.Second)).Std(); later.Sub(back) != time.Second || !hasMonotonic(later) {
		t.Fatalf("a second later: %v apart, monotonic %v", later.Sub(back), hasMonotonic(later))
	}
	if hasMonotonic(time.Unix(0, now.UnixNano())) {
		t.Fatal("a time rebuilt from unix nanoseconds has a monotonic reading: the test cannot tell")
	}
}

// A step of the wall clock moves no stored time against the clock: a time
// stored before the step is as far from now after it.
func TestWallStepMovesNothing(t *testing.T) {
	at := Of(time.Now().Add(time.Second))
	before := time.Until(at.Std())
	back := StepWall(-time.Hour)
	defer back()
	after := time.Until(at.Std())
	if d := before - after; d < 0 || d > time.Minute {
		t.Fatalf("a stored time moved by %v against the clock when the wall clock stepped back an hour", d)
	}
}

// Now, read by the monotonic clock alone, is the reading Of gives a
// time.Now taken at the same moment: it lies between two taken around it.
func TestNowIsOfTimeNow(t *testing.T) {
	if mutant.On(mutant.WallClock) {
		t.Skip("the seeded bug reads the wall clock")
	}
	for range 1000 {
		before := Of(time.Now())
		now := Now()
		after := Of(time.Now())
		if now < before || now > after {
			t.Fatalf("Now() = %d, not between %d and %d read around it", now, before, after)
		}
	}
}

// BenchmarkNow is the clock read every question of a hold makes, beside
// the reading through time.Now it replaced.
func BenchmarkNow(b *testing.B) {
	b.Run("Now", func(b *testing.B) {
		for b.Loop() {
			_ = Now()
		}
	})
	b.Run("OfTimeNow", func(b *testing.B) {
		for b.Loop() {
			_ = Of(time.Now()) + Time(jumped.Load())
		}
	})
}

package mono

import (
	"testing"
	"time"
)

// Jump moves the clock Now reads, as a stop leaves it: Now jumps, the
// stall watch measures the jump as a stall, and its end steps Now back,
// forgets the stall, and is no stall itself.
func TestJumpIsAStall(t *testing.T) {
	unwatch := Watch()
	defer unwatch()
	defer forgetStalls()
	const d = 15 * time.Second
	before := Now()
	back := Jump(d)
	if got := time.Duration(Now() - before); got < d || got > d+time.Second {
		t.Fatalf("Now moved %v over a jump of %v", got, d)
	}
	s, ok := StallIn(Now().Std().Add(-time.Second), Now().Std())
	if !ok || s.Len() < d-WatchEvery || s.Len() > d+time.Second {
		t.Fatalf("the jump measured as %v (found %v); want a stall of about %v", s.Len(), ok, d)
	}
	back()
	if got := time.Duration(Now() - before); got > time.Second {
		t.Fatalf("Now still %v on after the jump ended", got)
	}
	time.Sleep(3 * WatchEvery)
	if s, ok := StallIn(before.Std(), Now().Std()); ok {
		t.Fatalf("a stall of %v after the jump ended", s.Len())
	}
}

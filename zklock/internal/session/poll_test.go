package session

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestPollSlowsWhenIdle: a floor made by Wrap reads its connection's state
// every pollIdle while it has no hold and no acquisition under way, at
// once when an acquisition begins, and every pollEvery while one is under
// way. (It read it every 5 ms whatever it did: two hundred wakeups a
// second per idle connection of the drop-in.) In a bubble: the counts are
// of virtual time.
func TestPollSlowsWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, c := polledFloor()
		defer s.Close()
		reads := func(d time.Duration) int64 {
			before := c.reads.Load()
			time.Sleep(d)
			synctest.Wait()
			return c.reads.Load() - before
		}
		if n := reads(time.Second); n > 12 {
			t.Errorf("idle for 1s: %d reads of the state; want about %d (every %v)", n, time.Second/pollIdle, pollIdle)
		}
		before := c.reads.Load()
		s.Waiting(1) // an acquisition begins
		synctest.Wait()
		if c.reads.Load() == before {
			t.Error("an acquisition began on an idle floor: the state was not read at once")
		}
		if n := reads(100 * time.Millisecond); n < 15 {
			t.Errorf("an acquisition under way for 100ms: %d reads of the state; want about %d (every %v)", n, 100*time.Millisecond/pollEvery, pollEvery)
		}
		s.Waiting(-1)
		reads(pollEvery) // the poll under way ends at the old period
		if n := reads(time.Second); n > 12 {
			t.Errorf("idle again for 1s: %d reads of the state; want about %d", n, time.Second/pollIdle)
		}
	})
}

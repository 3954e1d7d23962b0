package session

import (
	"time"

	"github.com/go-zookeeper/zk"
)

// The poll: a floor made by Wrap cannot install go-zookeeper's event
// callback (only zk.Connect can), so it reads its connection's state.

// pollEvery is how often a floor made by Wrap reads its connection's state
// while it has a hold or an acquisition under way: a holder hears of a
// possible loss within it. A test can make the poll lag (Hooks.PollEvery).
const pollEvery = 5 * time.Millisecond

// pollIdle is how often it reads it otherwise: no one waits on the state
// then but the next acquisition, which has it read at its start
// (Waiting). An idle connection of the drop-in costs ten wakeups a second,
// not two hundred. The lease's explorer holds the floor to its promises
// with every poll lagging 100 ms.
const pollIdle = 100 * time.Millisecond

// poll feeds observe under Wrap, from events and from the
// connection's state, read often enough that a short disconnection or a
// session change is seen even when the channel dropped its event.
func (st *sessionState) poll(events <-chan zk.Event) {
	s := st.s
	t := time.NewTimer(st.pollPeriod())
	defer t.Stop()
	quit := s.link.quit
	for {
		select {
		case <-quit:
			quit = nil
			st.connClosed()
		case ev, ok := <-events:
			if !ok {
				events = nil
				st.closeState()
				continue
			}
			st.onEvent(ev)
		case <-st.active:
			st.catchUp()
			t.Reset(st.pollPeriod())
		case <-t.C:
			st.catchUp()
			t.Reset(st.pollPeriod())
		case <-s.life.ctx.Done():
			return
		}
	}
}

// pollPeriod is the poll's period now: pollEvery while the floor has a
// hold or an acquisition under way, else pollIdle.
func (st *sessionState) pollPeriod() time.Duration {
	every, idle := st.pollPeriods()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.waiting > 0 || len(st.holds) > 0 {
		return every
	}
	return max(every, idle)
}

// pollPeriods are the poll's periods, busy and idle: the library's, or
// one a test set for both (Hooks.PollEvery).
func (st *sessionState) pollPeriods() (every, idle time.Duration) {
	if h := st.s.cfg.Hooks; h != nil && h.PollEvery > 0 {
		return h.PollEvery, h.PollEvery
	}
	return pollEvery, pollIdle
}

// wakePoll has the poll read the state at once and poll at pollEvery from
// then, as an acquisition begins on an idle floor. It never blocks.
func (st *sessionState) wakePoll() {
	if every, idle := st.pollPeriods(); idle <= every {
		return // one period: nothing to change (the lease's explorer)
	}
	select {
	case st.active <- struct{}{}:
	default:
	}
}

// connClosed ends the floor whose connection its caller closed (Wrap,
// DialConn): the session is over for good, and every wait on it must end.
func (st *sessionState) connClosed() {
	st.s.link.connGone.Store(true)
	st.closeState()
	st.s.life.cancel()
}

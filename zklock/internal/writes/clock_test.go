package writes_test

import "time"

// The writer's clock in the explorer: time is a counter that moves only
// when a timer fires (tm, the earliest armed one).

// simTimer is a timer of the writer's clock.
type simTimer struct {
	w        *world
	deadline time.Duration
	f        func()
	armed    bool
}

func (t *simTimer) Stop() bool {
	was := t.armed
	t.armed = false
	return was
}

func (t *simTimer) Reset(d time.Duration) bool {
	was := t.armed
	t.deadline, t.armed = t.w.now+d, true
	return was
}

// fire fires the earliest armed timer, time moving to its deadline.
func (w *world) fire() {
	var first *simTimer
	for _, t := range w.timers {
		if t.armed && (first == nil || t.deadline < first.deadline) {
			first = t
		}
	}
	first.armed = false
	w.now = max(w.now, first.deadline)
	w.logf("timer fires at %v", w.now)
	w.spawn(first.f)
	w.tasks[len(w.tasks)-1].timer = true
}

func (w *world) armedTimer() bool {
	for _, t := range w.timers {
		if t.armed {
			return true
		}
	}
	return false
}

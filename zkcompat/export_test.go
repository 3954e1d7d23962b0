package zkcompat

import (
	"context"
	"sync"
)

// SetBeforeReleaseHookForTest makes Unlock call fn with the hold's held
// context right before it releases the shared lock, until restore.
func SetBeforeReleaseHookForTest(fn func(held context.Context)) (restore func()) {
	testHookBeforeRelease = fn
	return func() { testHookBeforeRelease = nil }
}

// TrackDeletesForTest makes pending report, for every shared lock made
// from then on, how many of its handles' nodes the drop-in still waits to
// hear the delete of, in all; restore stops the tracking.
func TrackDeletesForTest() (pending func() int, restore func()) {
	var mu sync.Mutex
	var made []*pathEntry
	testHookNewPath = func(e *pathEntry) {
		mu.Lock()
		made = append(made, e)
		mu.Unlock()
	}
	pending = func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, e := range made {
			e.dels.mu.Lock()
			n += len(e.dels.held)
			e.dels.mu.Unlock()
		}
		return n
	}
	return pending, func() { testHookNewPath = nil }
}

package gocronlock

import "time"

// AfterWindow is how long after a run of a job of window w its next
// attempt runs: the window, and a margin for the latencies.
func AfterWindow(w time.Duration) time.Duration { return w + 20*time.Millisecond }

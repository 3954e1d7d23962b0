package gocronlock

import "time"

// AfterWindow is how long after a run of a job of window w its next
// attempt runs: the window, and a margin for the latencies. The margin is
// what the next write may take and still confirm its run (a run node
// write answered later than the margin past the window is ErrSlowWrite):
// 20 ms was met by a write answered in 24 ms in a loaded make test's race
// run (run 114).
func AfterWindow(w time.Duration) time.Duration { return w + 100*time.Millisecond }

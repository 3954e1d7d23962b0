package tier

// GateWaiters reports how many goroutines wait at l's gate, so that tests
// of hand-off know the next holder is there.
func GateWaiters(l *Lock) int32 { return l.g.waiters() }

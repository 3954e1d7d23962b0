package tier

// GateWaiters reports how many goroutines wait at l's gate (tests only).
func GateWaiters(l *Lock) int { return int(l.g.waiters()) }

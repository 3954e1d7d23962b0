package tier

// GateWaiters reports how many goroutines wait at l's gate (test seam).
func GateWaiters(l *Lock) int32 { return l.g.waiters() }

package tier

// GateWaiters reports how many goroutines wait at l's gate, so that tests
// of hand-off and revocation know the next holder is there.
func GateWaiters(l *Lock) int { return int(l.g.waiters()) }

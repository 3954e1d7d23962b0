package session

import "fmt"

// The states a floor moves through, apart from the session itself: the
// state tracking (state.go), the grant and the write path's link speak of
// them. Package zklock's State is their type, and says what each means to
// a holder (zklock/states.go); the floor counts them as plain ints, in
// that order, so that the type, its documentation and its names are
// written once.
const (
	StateConnecting = iota // no session yet
	StateConnected
	StateDisconnected
	StateExpired
	StateClosed
)

// StateName names state st, as in logs (zklock's State.String).
func StateName(st int) string {
	switch st {
	case StateConnecting:
		return "connecting"
	case StateConnected:
		return "connected"
	case StateDisconnected:
		return "disconnected"
	case StateExpired:
		return "expired"
	case StateClosed:
		return "closed"
	}
	return fmt.Sprintf("State(%d)", st)
}

package session

import "fmt"

// The states a floor moves through, apart from the session itself: the
// options (WithStateListener) and the state tracking (state.go) speak of
// them too.

// State is what a floor knows about its ZooKeeper session.
type State int

// The states a floor moves through.
const (
	// StateConnecting: no session yet.
	StateConnecting State = iota
	// StateConnected: a live session; holds are valid.
	StateConnected
	// StateDisconnected: the connection dropped and the session may or may
	// not survive; a holder cannot know whether it still holds its locks.
	StateDisconnected
	// StateExpired: the server expired the session; its ephemeral nodes,
	// and so every hold, are gone. The client reconnects with a new session.
	StateExpired
	// StateClosed: Close was called or the connection was closed.
	StateClosed
)

// String names the state, as in logs.
func (s State) String() string {
	switch s {
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
	return fmt.Sprintf("State(%d)", int(s))
}

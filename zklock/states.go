package zklock

import "github.com/tierlock/tierlock/zklock/internal/session"

// The states a Session moves through, apart from the session itself: the
// options (WithStateListener) and the state tracking (state.go) speak of
// them too. They are the floor's states (package session), in its order:
// Session.State and the listener convert one to the other.

// State is what a Session knows about its ZooKeeper session.
type State int

// The states a Session moves through.
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
func (s State) String() string { return session.State(s).String() }

package zklock

import "github.com/tierlock/tierlock/zklock/internal/session"

// The states a Session moves through, apart from the session itself: the
// options (WithStateListener) speak of them too. Their values and names
// are the floor's (package session counts them as plain ints, and tracks
// them): State is their type, written here only, with what each means to
// a holder.

// State is what a Session knows about its ZooKeeper session.
type State int

// The states a Session moves through.
const (
	// StateConnecting: no session yet.
	StateConnecting State = session.StateConnecting
	// StateConnected: a live session; holds are valid.
	StateConnected State = session.StateConnected
	// StateDisconnected: the connection dropped and the session may or may
	// not survive; a holder cannot know whether it still holds its locks.
	StateDisconnected State = session.StateDisconnected
	// StateExpired: the server expired the session; its ephemeral nodes,
	// and so every hold, are gone. The client reconnects with a new session.
	StateExpired State = session.StateExpired
	// StateClosed: Close was called or the connection was closed.
	StateClosed State = session.StateClosed
)

// String names the state, as in logs.
func (s State) String() string { return session.StateName(int(s)) }

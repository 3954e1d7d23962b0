package zklock

import (
	"context"

	"github.com/tierlock/tierlock/internal/fourlw"
)

// SetAskConnections makes the sessions' stall checks ask fn instead of
// the servers, until restore is called.
func SetAskConnections(fn func(context.Context, []string, fourlw.Options) (fourlw.Connections, error)) (restore func()) {
	old := askConnections
	askConnections = fn
	return func() { askConnections = old }
}

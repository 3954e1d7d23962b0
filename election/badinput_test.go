package election_test

import (
	"testing"

	"github.com/tierlock/tierlock/election"
	"github.com/tierlock/tierlock/internal/nilcheck"
)

// Methods on a nil *Election do not panic (the module's convention).
func TestNilReceivers(t *testing.T) { nilcheck.Methods(t, (*election.Election)(nil)) }

package election_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/election"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// One real ZooKeeper for the package; goleak checks nothing is left running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

func newElection(t testing.TB, s *zklock.Session, path string) *election.Election {
	t.Helper()
	e, err := election.New(s, path)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

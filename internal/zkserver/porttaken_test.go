package zkserver_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/tierlock/tierlock/internal/zkserver"
)

// TestStartRetriesAnElectionPortTaken: a port picked free and taken by
// another process before the member binds it. A member whose election
// port is taken still comes to serve, and exits seconds later (loaded
// make test run 56, docs/benchmarks.md: the nemesis then partitioned an ensemble with no
// member to spare); the start sees the failed bind in its log and retries
// with fresh ports, so no member of the ensemble it returns failed one.
func TestStartRetriesAnElectionPortTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts an ensemble member whose port is taken, about 6 s")
	}
	var taken net.Listener
	defer zkserver.SetLaidOutHook(func(elect []int) {
		if taken != nil {
			return // the first layout only
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(elect[1])))
		if err != nil {
			t.Errorf("take member 1's election port: %v", err)
			return
		}
		taken = l
	})()
	c := start(t, 3)
	if taken == nil {
		t.Fatal("no port was taken")
	}
	defer taken.Close()
	for i := range c.Size() {
		if tail := c.LogTail(i, 1000); strings.Contains(tail, "Address already in use") {
			t.Errorf("member %d of the ensemble started could not bind a port:\n%s", i, tail)
		}
	}
}

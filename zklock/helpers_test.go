package zklock_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
)

// One real ZooKeeper for the package; goleak checks nothing is left running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

// Shared helpers: see internal/zktest.
var (
	quietLog         = zktest.QuietLog
	connect          = zktest.Connect
	ctxT             = zktest.Context
	children         = zktest.Children
	eventually       = zktest.Eventually
	watchesBySession = zktest.WatchesBySession
	reportRequests   = zktest.ReportRequests
)

var newLock = zktest.NewLock

var nodeName = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-\d{10}$`)

// watchersOf returns how many sessions watch path, from the server's wchp
// four-letter word.
func watchersOf(t testing.TB, path string) int {
	t.Helper()
	out, err := zktest.Cluster(t).FourLetter(context.Background(), 0, "wchp")
	if err != nil {
		t.Fatal(err)
	}
	n, in := 0, false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "/"):
			in = line == path
		case in && strings.HasPrefix(strings.TrimSpace(line), "0x"):
			n++
		}
	}
	return n
}

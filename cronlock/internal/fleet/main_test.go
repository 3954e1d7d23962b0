package fleet

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/child"
)

// workerRole is the fleet's workers' role: this test binary started again
// by the fleet test (internal/child), its task Main's arguments.
const workerRole = "cronlock-fleet"

// TestMain runs the tests, and goleak checks that nothing is left running;
// started by the fleet test as a worker, the binary is a worker instead.
func TestMain(m *testing.M) {
	child.Dispatch(map[string]func() int{workerRole: workerMain})
	goleak.VerifyTestMain(m)
}

func workerMain() int {
	var args []string
	if err := child.Task(&args); err != nil {
		fmt.Fprintln(os.Stderr, "cronfleet worker:", err)
		return 2
	}
	return Main(args, os.Stdout, os.Stderr)
}

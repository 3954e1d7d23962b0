//go:build tierlocktrace

package replay

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
)

// With the tierlocktrace tag, the recorded runs need a real ZooKeeper.
func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

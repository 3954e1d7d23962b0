//go:build !tierlocktrace

package replay

import (
	"testing"

	"go.uber.org/goleak"
)

// Without the tierlocktrace tag no test here needs a server.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

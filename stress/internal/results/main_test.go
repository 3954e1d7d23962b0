package results

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, zktest.PorcupineLeftovers) }

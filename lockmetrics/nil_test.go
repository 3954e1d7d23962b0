package lockmetrics_test

import (
	"testing"

	"github.com/tierlock/tierlock/internal/nilcheck"
	"github.com/tierlock/tierlock/lockmetrics"
)

// Methods on a nil *Collector do not panic (the module's convention).
func TestNilReceivers(t *testing.T) { nilcheck.Methods(t, (*lockmetrics.Collector)(nil)) }

package mutant

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestOn: no bug is on but the one TIERLOCK_MUTANT named at the start, and
// none at all without the tierlockmutants tag.
func TestOn(t *testing.T) {
	set := os.Getenv(Env)
	for _, n := range append(Names(), "", "no-such-bug") {
		want := tagged && n != "" && n == set
		if got := On(n); got != want {
			t.Errorf("On(%q) = %v with %s=%q (tagged %v), want %v", n, got, Env, set, tagged, want)
		}
	}
}

package results

import (
	"strings"
	"testing"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/linear"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// Porcupine's verdict on a run's history is reported beside the checker's,
// and fails the run on its own: a history the checker passed but
// Porcupine did not is a failure, and so is one it could not decide.
func TestPorcupineVerdict(t *testing.T) {
	holds := []exclusion.Hold{
		{Proc: 0, Token: 1, Enter: 10, Exit: 20}, {Proc: 1, Token: 2, Enter: 30, Exit: 40},
	}
	pass := linear.Check(linear.History{Holds: holds}, linear.Options{Tokens: true})
	holds[1].Token = 1
	fail := linear.Check(linear.History{Holds: holds}, linear.Options{Tokens: true})
	unknown := pass
	unknown.Verdict, unknown.Decided = linear.Unknown, 0
	for _, c := range []struct {
		p       *linear.Result
		ok      bool
		verdict string
	}{
		{&pass, true, "PASS: mutual exclusion held: 0 violations in 2 holds checked (1 implementation(s)); porcupine: linearizable (1 path, 4 operations, "},
		{nil, true, "PASS: mutual exclusion held: 0 violations in 2 holds checked (1 implementation(s))"},
		{&fail, false, "FAIL: 0 violations in 2 holds checked, but the history check failed; tier: porcupine: not linearizable"},
		{&unknown, false, "FAIL: 0 violations in 2 holds checked, but the history check failed; tier: porcupine: unknown"},
	} {
		r := Impl{Impl: proto.Tier, Check: exclusion.Result{Holds: 2, TokensChecked: true}, Porcupine: c.p}
		s := Summary{Results: []Impl{r}, OK: r.OK()}
		if r.OK() != c.ok {
			t.Errorf("%v: OK %v", c.p, r.OK())
		}
		if v := Verdict(s); !strings.HasPrefix(v, c.verdict) {
			t.Errorf("verdict %q, want %q", v, c.verdict)
		}
		if f := Failures(s.Results); c.ok != (len(f) == 0) || !c.ok && !strings.HasPrefix(f[0], "tier: porcupine: ") {
			t.Errorf("failures %q", f)
		}
	}
}

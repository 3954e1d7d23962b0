//go:build tierlockmutants

package session

import (
	"slices"
	"strings"
	"testing"

	"github.com/tierlock/tierlock/internal/mutant"
)

// leaseBugs are the seeded bugs of the session's floor (internal/mutant),
// each with the property that must refuse it: the first seed, counting
// from 1, whose schedule breaks that property (others may break too).
// docs/lease.md lists what each is and after how many schedules it was
// refused.
var leaseBugs = []struct{ bug, prop string }{
	{mutant.ReachLong, "(a)"},
	{mutant.ChainNoGap, "(a)"},
	{mutant.ChainNoAfter, "(a)"},
	{mutant.TouchFromAnswer, "(a)"},
	{mutant.LeaseFromProof, "(a)"},
	{mutant.TimeoutAsked, "(a)"},
	{mutant.TimeoutLarger, "(a)"},
	{mutant.LossLate, "(b)"},
	{mutant.LapseLate, "(b)"},
	{mutant.GrantIgnoresLease, "(a)"},
	{mutant.GoneWhileDown, "(c)"},
	{mutant.NoRenewal, "(d)"},
	{mutant.LapseEndUntold, "(e)"},
}

// TestLeaseExploreFindsSeededBugs: the explorer finds each bug by itself,
// and every property refuses one.
//
//	go test -tags tierlockmutants -run TestLeaseExploreFindsSeededBugs -v ./zklock/internal/session/
func TestLeaseExploreFindsSeededBugs(t *testing.T) {
	const limit = 20000
	var refused []string
	for _, b := range leaseBugs {
		t.Run(b.bug, func(t *testing.T) {
			restore := mutant.Set(b.bug)
			defer restore()
			first, fo := runSeeds(t, 1, limit, func(o outcome) bool { return len(o.fails) > 0 })
			if first != 0 {
				t.Logf("first refused after %d schedules: %s", first, fo.fails[0])
			}
			seed, o := runSeeds(t, 1, limit, func(o outcome) bool { return failsWith(o, b.prop) })
			if seed == 0 {
				t.Fatalf("%s not refused by %s in %d schedules", b.bug, b.prop, limit)
			}
			refused = append(refused, b.prop)
			var f string
			for _, x := range o.fails {
				if property(x) == b.prop {
					f = x
					break
				}
			}
			t.Logf("refused by %s after %d schedules: %s (replay: %s=%s go test -tags tierlockmutants -run 'TestLeaseExploreReplay$' -v ./zklock/internal/session -lease.seed=%d)",
				b.prop, seed, f, mutant.Env, b.bug, seed)
			if testing.Verbose() {
				t.Log(report(t, seed, o, b.prop))
			}
		})
	}
	// A hold that stands when the floor sees its session replaced: under
	// Wrap, no schedule reaches one (the lease ends every hold before the
	// leader can expire its session, and under WithLossOnExpiryOnly, whose
	// holds outlive that by up to T/8, a polled floor's chains lag too
	// far: none in 20,000 schedules over Wrap alone); (c) checks it all
	// the same, and a scene of its own shows it.
	t.Run(mutant.NewSessionKeepsHolds, func(t *testing.T) {
		restore := mutant.Set(mutant.NewSessionKeepsHolds)
		defer restore()
		fail := newSessionUnseen(t)
		if fail == "" {
			t.Fatalf("%s not refused by TestNewSessionUnseenEndsHolds's scene", mutant.NewSessionKeepsHolds)
		}
		t.Logf("refused by TestNewSessionUnseenEndsHolds's scene: %s", fail)
	})
	for _, p := range strings.Fields("(a) (b) (c) (d) (e)") {
		if !slices.Contains(refused, p) {
			t.Errorf("no seeded bug refused by %s", p)
		}
	}
}

//go:build tierlockmutants

package session

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// leaseBugs are the seeded bugs of the session's floor (internal/mutant),
// each with the property that must refuse it: the first seed, counting
// from 1, whose schedule breaks that property (others may break too).
// docs/lease.md lists what each is and after how many schedules it was
// refused.
var leaseBugs = []struct{ bug, prop string }{
	{mutant.ReachLong, "(a)"},
	{mutant.ChainNoGap, "(a)"},
	{mutant.ChainNoAfter, "(b)"}, // (a) refuses none in 20,000 since d83afe8, with the earlier double too
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
	{mutant.AuthTouches, "(b)"},
	{mutant.TimeoutKeptLonger, "(a)"},
	{mutant.WallClock, "(b)"}, // (a) refuses it after 32,026 schedules since the writer takes its rounds as the driver settles (9,731 before): docs/lease.md
	{mutant.HandshakeFromAnswer, "(a)"},
	{mutant.UntoldGrantIgnored, "(a)"},
	{mutant.GrantWholeReach, "(a)"}, // in a schedule with an nd step: none of 80,000 without it
	{mutant.GrantNoMargin, "(d)"},   // its margin clause: no healthy schedule's grant comes within T/16 of the deadline
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
			// One search: the first schedule that breaks any property is
			// noted on the way to the first that breaks b.prop (runSeeds
			// runs every seed below the one it returns).
			var mu sync.Mutex
			var first uint64
			var firstFail string
			seed, o := runSeeds(t, 1, limit, func(seed uint64, o outcome) bool {
				if len(o.fails) > 0 {
					mu.Lock()
					if first == 0 || seed < first {
						first, firstFail = seed, o.fails[0]
					}
					mu.Unlock()
				}
				return failsWith(o, b.prop)
			})
			if first != 0 {
				t.Logf("first refused after %d schedules: %s", first, firstFail)
			}
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
	// A ping dating a proof: the ring dates only a proof with no waiter
	// (a write WithoutPipelining, or one whose waiter a request of the
	// same key took), and a ping written between its queueing and its
	// write only dates it earlier, by the send loop's delay: its lease is
	// shorter, never longer, so (a) and (b) cannot see it, and (c) and (e)
	// only where a lapse falls on such a chain (none in 40,000 schedules,
	// nor 20,000 with every Dial schedule unpipelined: docs/lease.md).
	// wire's TestPingDatesNoProof refuses it; so does its scene here.
	t.Run(mutant.PingsInRing, func(t *testing.T) {
		restore := mutant.Set(mutant.PingsInRing)
		defer restore()
		fail := pingDatesNoProof(t)
		if fail == "" {
			t.Fatalf("%s not refused by TestPingDatesNoProof's scene", mutant.PingsInRing)
		}
		t.Logf("refused by TestPingDatesNoProof's scene: %s", fail)
	})
	for _, p := range strings.Fields("(a) (b) (c) (d) (e)") {
		if !slices.Contains(refused, p) {
			t.Errorf("no seeded bug refused by %s", p)
		}
	}
}

// pingDatesNoProof is wire's TestPingDatesNoProof through the tap's
// seams: a sync queued at a mark, a ping written (go-zookeeper's ticker,
// outside its requests' order), the sync written 15 ms later; the first
// write after the mark, which dates a proof with no waiter, must be the
// sync's. It says how it was dated otherwise ("": as it must be).
func pingDatesNoProof(t *testing.T) (fail string) {
	synctest.Test(t, func(*testing.T) {
		tap := wire.New(wire.Config{})
		rec := tap.NewRecorder()
		rec.Write(make([]byte, 48)) // the connect request
		mark := tap.Mark()
		rec.Write(header(-2, 11, 0))
		time.Sleep(15 * time.Millisecond)
		written := time.Now()
		rec.Write(requestFrame(1, wire.OpSync, syncKey))
		if at, ok := tap.FirstWriteAfter(mark); !ok || at.Before(written) {
			fail = fmt.Sprintf("the sync dated %v before its write (ok %v): by the ping", written.Sub(at), ok)
		}
	})
	return fail
}

package tier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
)

// Every multi-lock entry point given bad input answers with a sentinel
// error (errors.Is), never a panic, and the members keep working after it:
// each case ends by taking the whole set once more.
func TestMultiLockBadInput(t *testing.T) {
	servers := zktest.Servers(t)
	s, o := connect(t, servers), connect(t, servers)
	root := zktest.Path(t)
	pa, pb := root+"/a", root+"/b"
	la, rwb := newLock(t, s, pa), newRW(t, s, pb)
	lbOther := newLock(t, o, root+"/c") // a member on another session
	m := newMulti(t, la, rwb.Writer(), lbOther)
	other := newMulti(t, newLock(t, o, root+"/d"))
	ctx := ctxT(t, 30*time.Second)
	var nilMulti *tier.MultiLock
	var nilLock *tier.Lock
	var nilRW *tier.RWLock

	newErr := func(members ...tier.Member) func() error {
		return func() error { _, err := tier.NewMultiLock(members...); return err }
	}
	cases := []struct {
		name string
		want error
		call func() error
	}{
		{"no members", tier.ErrNoMembers, newErr()},
		{"nil member", tier.ErrNilMember, newErr(la, nil)},
		{"nil *Lock", tier.ErrNil, newErr(la, nilLock)},
		{"nil *RWLock reader", tier.ErrNil, newErr(nilRW.Reader(), la)},
		{"nil *RWLock writer", tier.ErrNil, newErr(nilRW.Writer())},
		{"same lock twice", tier.ErrDuplicateMember, newErr(la, rwb.Reader(), la)},
		{"read and write of one lock", tier.ErrDuplicateMember, newErr(rwb.Reader(), rwb.Writer())},
		{"two locks on one path", tier.ErrDuplicateMember, newErr(la, newLock(t, o, pa))},
		{"nil multi Acquire", tier.ErrNil, func() error { _, err := nilMulti.Acquire(ctx); return err }},
		{"nil multi is ErrNilLock", tier.ErrNil, func() error { _, err := nilMulti.Acquire(ctx); return err }},
		{"nil multi TryAcquire", tier.ErrNil, func() error { _, _, err := nilMulti.TryAcquire(ctx); return err }},
		{"nil multi Release", tier.ErrNil, func() error { return nilMulti.Release(ctx) }},
		{"nil multi Tokens", tier.ErrNil, func() error { _, err := nilMulti.Tokens(ctx); return err }},
		{"nil ctx Acquire", tier.ErrNilContext, func() error { _, err := m.Acquire(nil); return err }},          //nolint:staticcheck // the bad input under test
		{"nil ctx TryAcquire", tier.ErrNilContext, func() error { _, _, err := m.TryAcquire(nil); return err }}, //nolint:staticcheck
		{"nil ctx Release", tier.ErrNilContext, func() error { return m.Release(nil) }},                         //nolint:staticcheck
		{"nil ctx Tokens", tier.ErrNilContext, func() error { _, err := m.Tokens(nil); return err }},            //nolint:staticcheck
		{"cancelled ctx", context.Canceled, func() error { _, err := m.Acquire(cancelledCtx()); return err }},
		{"release by non-holder", tier.ErrNotHolder, func() error { return m.Release(ctx) }},
		{"tokens of non-holder", tier.ErrNotHolder, func() error { _, err := m.Tokens(ctx); return err }},
		{"release with another multi-lock's hold", tier.ErrNotHolder, func() error {
			held, err := other.Acquire(ctx)
			if err != nil {
				return err
			}
			defer other.Release(held)
			return m.Release(held)
		}},
		{"double release", tier.ErrNotHolder, func() error {
			held, err := m.Acquire(ctx)
			if err != nil {
				return err
			}
			if err := m.Release(held); err != nil {
				return err
			}
			return m.Release(held)
		}},
		{"member released behind its back", tier.ErrNotHolder, func() error {
			// The hold ends (its cause names a) and Release gives back
			// the rest, reporting a's release as not ours any more.
			held, err := m.Acquire(ctx)
			if err != nil {
				return err
			}
			if err := la.Release(held); err != nil {
				return err
			}
			<-held.Done()
			if me := memberErr(t, context.Cause(held)); me.Path != pa {
				t.Errorf("cause %v, want a", me)
			}
			return m.Release(held)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := callSafely(t, c.call)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if m.HoldCount(ctx) != 0 || nilMulti.HoldCount(ctx) != 0 || m.HoldCount(nil) != 0 { //nolint:staticcheck
				t.Fatal("a hold count where there is no hold")
			}
			held, ok, err := m.TryAcquire(ctx)
			if !ok || err != nil {
				t.Fatalf("the set is not free after the case: %v %v", ok, err)
			}
			if err := m.Release(held); err != nil {
				t.Fatal(err)
			}
		})
	}
	if nilMulti.Paths() != nil {
		t.Fatal("nil multi-lock has paths")
	}

	// A closed member: Acquire reports ErrClosed for it and holds nothing.
	if err := lbOther.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Acquire(ctx); !errors.Is(err, tier.ErrClosed) || memberErr(t, err).Path != root+"/c" {
		t.Fatalf("Acquire with a closed member: %v", err)
	}
	if _, ok, err := m.TryAcquire(ctx); ok || !errors.Is(err, tier.ErrClosed) {
		t.Fatalf("TryAcquire with a closed member: %v %v", ok, err)
	}
	assertNoNodes(t, s.Conn(), pa, pb, root+"/c")
}

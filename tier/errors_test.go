package tier_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// TestErrorsReexported checks the rule tier/errors.go states: every zklock
// sentinel a tier caller can receive is re-exported under its own name as
// the same value, and the ones the gate rules out are not.
func TestErrorsReexported(t *testing.T) {
	for _, c := range []struct {
		name      string
		tier, zkl error
	}{
		{"ErrLockLost", tier.ErrLockLost, zklock.ErrLockLost},
		{"ErrDisconnected", tier.ErrDisconnected, zklock.ErrDisconnected},
		{"ErrSessionExpired", tier.ErrSessionExpired, zklock.ErrSessionExpired},
		{"ErrLeaseExpired", tier.ErrLeaseExpired, zklock.ErrLeaseExpired},
		{"ErrNodeDeleted", tier.ErrNodeDeleted, zklock.ErrNodeDeleted},
		{"ErrSessionClosed", tier.ErrSessionClosed, zklock.ErrSessionClosed},
		{"ErrNilSession", tier.ErrNilSession, zklock.ErrNilSession},
		{"ErrInvalidPath", tier.ErrInvalidPath, zklock.ErrInvalidPath},
		{"ErrNilContext", tier.ErrNilContext, zklock.ErrNilContext},
		{"ErrInvalidOption", tier.ErrInvalidOption, zklock.ErrInvalidOption},
		{"ErrStaleHold", tier.ErrStaleHold, zklock.ErrStaleHold},
		{"ErrOutcomeUnknown", tier.ErrOutcomeUnknown, zklock.ErrOutcomeUnknown},
		{"ErrInvalidOp", tier.ErrInvalidOp, zklock.ErrInvalidOp},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.tier != c.zkl {
				t.Errorf("tier.%s is %v, not zklock.%s", c.name, c.tier, c.name)
			}
		})
	}
	t.Run("ErrClosed is tier's own", func(t *testing.T) {
		if errors.Is(tier.ErrClosed, zklock.ErrClosed) {
			t.Error("tier.ErrClosed matches zklock.ErrClosed; the rule says it is tier's own")
		}
	})
}

// TestNilReceiverErrors checks that the errors of nil receivers name the
// receiver's type and still match the sentinel used before them.
func TestNilReceiverErrors(t *testing.T) {
	for _, c := range []struct {
		err     error
		msg     string
		matches []error
	}{
		{tier.ErrNilLock, "tier: nil *Lock", nil},
		{tier.ErrNilRegistry, "tier: nil *Registry", []error{tier.ErrNilLock}},
		{fmt.Errorf("obtain: %w", tier.ErrNilRegistry), "obtain: tier: nil *Registry", []error{tier.ErrNilRegistry, tier.ErrNilLock}},
	} {
		t.Run(c.msg, func(t *testing.T) {
			if got := c.err.Error(); got != c.msg {
				t.Errorf("message %q, want %q", got, c.msg)
			}
			for _, m := range c.matches {
				if !errors.Is(c.err, m) {
					t.Errorf("errors.Is(%v, %v) = false", c.err, m)
				}
			}
		})
	}
	t.Run("ErrNilLock does not match ErrNilRegistry", func(t *testing.T) {
		if errors.Is(tier.ErrNilLock, tier.ErrNilRegistry) {
			t.Error("a nil *Lock's error matches ErrNilRegistry")
		}
	})
}

func TestTierString(t *testing.T) {
	for tr, want := range map[tier.Tier]string{
		tier.TierHandoff:   "handoff",
		tier.TierZooKeeper: "zookeeper",
		tier.Tier(7):       "Tier(7)",
	} {
		if got := tr.String(); got != want {
			t.Errorf("Tier(%d).String() = %q, want %q", int(tr), got, want)
		}
	}
}

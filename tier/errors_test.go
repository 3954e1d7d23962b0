package tier_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
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

// TestNilReceiverErrors checks that the error of a method on a nil pointer
// names the type and matches ErrNil, through wrapping too.
func TestNilReceiverErrors(t *testing.T) {
	var (
		l *tier.Lock
		r *tier.Registry
	)
	for _, c := range []struct {
		err error
		msg string
	}{
		{l.Close(), "tier: nil *Lock"},
		{r.Close(), "tier: nil *Registry"},
		{fmt.Errorf("obtain: %w", r.Close()), "obtain: tier: nil *Registry"},
	} {
		t.Run(c.msg, func(t *testing.T) {
			if got := c.err.Error(); got != c.msg {
				t.Errorf("message %q, want %q", got, c.msg)
			}
			if !errors.Is(c.err, tier.ErrNil) {
				t.Errorf("errors.Is(%v, ErrNil) = false", c.err)
			}
		})
	}
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

// Errors of tier calls name tier, the package called, whatever package
// they came from; errors.Is still sees the sentinels (issue 23).
func TestErrorsNameTier(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	r, err := tier.NewRegistry(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Acquire(context.Background(), "")
	if !errors.Is(err, tier.ErrInvalidPath) || !strings.HasPrefix(err.Error(), "tier: ") || strings.Contains(err.Error(), "zklock") {
		t.Errorf("a bad key: %q; want a tier error matching ErrInvalidPath", err)
	}
	if _, err := tier.New(s, "relative/path"); !errors.Is(err, tier.ErrInvalidPath) || !strings.HasPrefix(err.Error(), "tier: ") {
		t.Errorf("a bad path: %q; want a tier error matching ErrInvalidPath", err)
	}
	if _, err := tier.NewRWLock(s, "/zookeeper/x"); !errors.Is(err, tier.ErrInvalidPath) || !strings.HasPrefix(err.Error(), "tier: ") {
		t.Errorf("NewRWLock on a reserved path: %q", err)
	}
	s.Close()
	if _, err := tier.NewRegistry(s, zktest.Path(t)); !errors.Is(err, tier.ErrSessionClosed) {
		t.Errorf("NewRegistry after Close: %v; want ErrSessionClosed, as tier.New", err)
	}
	if _, err := tier.New(s, zktest.Path(t)); !errors.Is(err, tier.ErrSessionClosed) {
		t.Errorf("New after Close: %v; want ErrSessionClosed", err)
	}
}

// Issue 31, seam 6: the registries' constructors name tier, as tier.New
// does, for a nil session too; and an invalid root is reported as a
// registry root, not as a lock path, while errors.Is still sees the
// sentinels. Before the fix a nil session's error said "zklock: nil
// session" and "/" was "the root cannot be a lock".
func TestRegistryErrorsNameTier(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	type newFn func(s *zklock.Session, root string) error
	news := map[string]newFn{
		"NewRegistry":   func(s *zklock.Session, root string) error { _, err := tier.NewRegistry(s, root); return err },
		"NewRWRegistry": func(s *zklock.Session, root string) error { _, err := tier.NewRWRegistry(s, root); return err },
		"NewSemaphoreRegistry": func(s *zklock.Session, root string) error {
			_, err := tier.NewSemaphoreRegistry(s, root, 2)
			return err
		},
	}
	for name, mk := range news {
		t.Run(name, func(t *testing.T) {
			err := mk(nil, "/x")
			if !errors.Is(err, tier.ErrNilSession) || !strings.HasPrefix(err.Error(), "tier: ") || strings.Contains(err.Error(), "zklock") {
				t.Errorf("nil session: %q; want a tier error matching ErrNilSession", err)
			}
			for _, root := range []string{"/", "relative", "/a/", "/zookeeper/x", "/a//b", "/a/./b"} {
				err := mk(s, root)
				msg := fmt.Sprint(err)
				if !errors.Is(err, tier.ErrInvalidPath) || !strings.HasPrefix(msg, "tier: registry root ") ||
					strings.Contains(msg, "lock") {
					t.Errorf("root %q: %q; want \"tier: registry root ...\" matching ErrInvalidPath", root, msg)
				}
			}
		})
	}
}

// The other errors of tier's constructors name tier too: bad options and
// a semaphore of no leases.
func TestConstructorErrorsNameTier(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	_, errNew := tier.New(s, zktest.Path(t), tier.WithHandoff(-1, time.Second))
	_, errRW := tier.NewRWLock(s, zktest.Path(t), tier.WithRevocable())
	_, errSem := tier.NewSemaphore(s, zktest.Path(t), 0)
	_, errSemReg := tier.NewSemaphoreRegistry(s, zktest.Path(t), 0)
	for _, err := range []error{errNew, errRW, errSem, errSemReg} {
		if !errors.Is(err, tier.ErrInvalidOption) || !strings.HasPrefix(fmt.Sprint(err), "tier: ") || strings.Contains(fmt.Sprint(err), "zklock") {
			t.Errorf("%q; want a tier error matching ErrInvalidOption", err)
		}
	}
}

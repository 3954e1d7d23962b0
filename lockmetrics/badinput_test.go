package lockmetrics_test

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierlock/tierlock/internal/nilcheck"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/lockmetrics"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// Bad input gets an error value, never a panic, and leaves the registry
// usable.
func TestBadInput(t *testing.T) {
	if _, err := lockmetrics.New(nil); !errors.Is(err, lockmetrics.ErrNilRegisterer) {
		t.Errorf("nil registerer: %v", err)
	}
	var typedNil *prometheus.Registry
	if err := zktest.NoPanic(t, func() error { _, err := lockmetrics.New(typedNil); return err }); err == nil {
		t.Error("typed nil registerer: no error")
	}

	reg := prometheus.NewRegistry()
	first, err := lockmetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	err = zktest.NoPanic(t, func() error { _, err := lockmetrics.New(reg); return err })
	var already prometheus.AlreadyRegisteredError
	if !errors.As(err, &already) {
		t.Errorf("second registration: %v, want an AlreadyRegisteredError", err)
	}
	if _, err := lockmetrics.New(reg, lockmetrics.WithNamespace("other")); err != nil {
		t.Errorf("a second namespace on the same registry: %v", err)
	}
	if !reg.Unregister(first) {
		t.Error("Unregister: not found")
	}
	if _, err := lockmetrics.New(reg); err != nil {
		t.Errorf("register after Unregister: %v", err)
	}

	for name, opt := range map[string]lockmetrics.Option{
		"nil lock name":        lockmetrics.WithLockName(nil),
		"zero max locks":       lockmetrics.WithMaxLocks(0),
		"no buckets":           lockmetrics.WithBuckets(),
		"unsorted buckets":     lockmetrics.WithBuckets(1, 0.5),
		"repeated bucket":      lockmetrics.WithBuckets(1, 1),
		"empty namespace":      lockmetrics.WithNamespace(""),
		"namespace with space": lockmetrics.WithNamespace("a b"),
		"nil logger":           lockmetrics.WithLogger(nil),
	} {
		err := zktest.NoPanic(t, func() error { _, err := lockmetrics.New(prometheus.NewRegistry(), opt); return err })
		if !errors.Is(err, lockmetrics.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
	if _, err := lockmetrics.New(prometheus.NewRegistry(), nil); err != nil {
		t.Errorf("a nil option is skipped: %v", err)
	}

	// A nil *Collector does nothing, wherever it is plugged in.
	var m *lockmetrics.Collector
	zktest.NoPanic(t, func() error {
		m.Observe(tier.Event{Kind: tier.Acquired})
		m.SessionListener()(zklock.StateConnected)
		m.Describe(make(chan *prometheus.Desc, 100))
		m.Collect(make(chan prometheus.Metric, 100))
		return nil
	})
	// Events out of the ordinary: a zero Event, an unknown kind, a loss
	// with no cause.
	m, ep := newCollector(t)
	zktest.NoPanic(t, func() error {
		m.Observe(tier.Event{})
		m.Observe(tier.Event{Kind: tier.EventKind(99), Path: "/x"})
		m.Observe(tier.Event{Kind: tier.Lost, Path: "/x"})
		return nil
	})
	ep.expect(map[string]float64{`tierlock_holds_lost_total{lock=all,reason=other}`: 1})
}

// Lock names past WithMaxLocks share the "other" series, however many
// distinct names the name function returns.
func TestLockNamesBounded(t *testing.T) {
	m, ep := newCollector(t, lockmetrics.WithMaxLocks(2), lockmetrics.WithLockName(func(p string) string { return p }),
		lockmetrics.WithLogger(zktest.QuietLog))
	for _, p := range []string{"/a", "/b", "/c", "/d", "/a", "/e"} {
		m.Observe(tier.Event{Kind: tier.Acquired, Path: p, Tier: tier.TierZooKeeper, Try: true})
	}
	s := scraped(ep.scrape())
	locks := s.labelValues("tierlock_acquisitions_total", "lock")
	if len(locks) != 3 || !locks["/a"] || !locks["/b"] || !locks[lockmetrics.OtherLock] {
		t.Errorf("lock labels %v, want /a, /b and %s", locks, lockmetrics.OtherLock)
	}
	for lock, want := range map[string]float64{"/a": 2, "/b": 1, lockmetrics.OtherLock: 3} {
		if got := s.value("tierlock_acquisitions_total", "lock="+lock, "tier=zookeeper"); got != want {
			t.Errorf("acquisitions of %s: %v, want %v", lock, got, want)
		}
	}
}

func TestPrefix(t *testing.T) {
	for _, c := range []struct {
		n          int
		path, want string
	}{
		{1, "/jobs/42/lock", "/jobs"},
		{2, "/jobs/42/lock", "/jobs/42"},
		{2, "/app/jobs/k", "/app/jobs"},
		{3, "/app/jobs/k", "/app/jobs/k"},
		{5, "/a", "/a"},
		{0, "/a/b", "/a"},
		{1, "/", "/"},
	} {
		if got := lockmetrics.Prefix(c.n)(c.path); got != c.want {
			t.Errorf("Prefix(%d)(%q) = %q, want %q", c.n, c.path, got, c.want)
		}
	}
}

// Methods on a nil *Collector do not panic (the module's convention).
func TestNilReceivers(t *testing.T) { nilcheck.Methods(t, (*lockmetrics.Collector)(nil)) }

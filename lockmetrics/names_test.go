package lockmetrics_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/tierlock/tierlock/lockmetrics"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// The series are named by Prometheus's conventions (promlint finds
// nothing), and exactly as docs/metrics.md lists them: each family's
// labels, one label name ("reason") for why an acquisition failed and why
// a hold was lost, every outcome of a wait, and every session state,
// closed included, in both session metrics.
func TestSeriesNames(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := lockmetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	ep := serve(t, reg)
	m.Observe(tier.Event{Kind: tier.Acquired, Path: "/a", Tier: tier.TierZooKeeper, Try: true})
	m.SessionListener()(zklock.StateConnected)
	m.ObserveJob("report", "ran", 0)

	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(fams).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}

	want := map[string][]string{ // family -> its label names
		"tierlock_acquire_wait_seconds":         {"lock", "outcome"},
		"tierlock_hold_seconds":                 {"lock"},
		"tierlock_holders":                      {"lock"},
		"tierlock_waiters":                      {"lock"},
		"tierlock_acquisitions_total":           {"lock", "tier"},
		"tierlock_acquire_failures_total":       {"lock", "reason"},
		"tierlock_holds_lost_total":             {"lock", "reason"},
		"tierlock_revocations_total":            {"lock"},
		"tierlock_guarded_write_failures_total": {"lock"},
		"tierlock_session_state":                {"state"},
		"tierlock_session_transitions_total":    {"state"},
		"tierlock_stalled_locks":                {"connection"},
		"tierlock_stalls_total":                 {"connection"},
		"tierlock_job_locks_total":              {"job", "outcome"},
		"tierlock_job_lock_seconds":             {"outcome"},
	}
	s := scraped(ep.scrape())
	if got := slices.Sorted(maps.Keys(s)); !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
		t.Errorf("families:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(slices.Sorted(maps.Keys(want)), "\n"))
	}
	for name, labels := range want {
		for _, mt := range s[name].GetMetric() {
			var got []string
			for _, lp := range mt.GetLabel() {
				got = append(got, lp.GetName())
			}
			if slices.Sort(got); !slices.Equal(got, labels) {
				t.Errorf("%s: labels %v, want %v", name, got, labels)
			}
		}
	}
	values := map[string][]string{ // family/label -> its values, all there from the first event
		"tierlock_acquire_wait_seconds/outcome":    {"acquired", "canceled", "failed"},
		"tierlock_acquire_failures_total/reason":   {"canceled", "closed", "deadline_exceeded", "error"},
		"tierlock_holds_lost_total/reason":         {"disconnected", "lease_expired", "node_deleted", "other", "session_closed", "session_expired"},
		"tierlock_session_state/state":             {"closed", "connected", "connecting", "disconnected", "expired"},
		"tierlock_session_transitions_total/state": {"closed", "connected", "connecting", "disconnected", "expired"},
		"tierlock_stalled_locks/connection":        {"none", "unknown"},
		"tierlock_stalls_total/connection":         {"none", "unknown"},
	}
	for key, want := range values {
		name, label, _ := strings.Cut(key, "/")
		if got := slices.Sorted(maps.Keys(s.labelValues(name, label))); !slices.Equal(got, want) {
			t.Errorf("%s: %s %v, want %v", name, label, got, want)
		}
	}
}

// A wait that fails is observed in the wait histogram under its outcome,
// with the time it took: a context cancelled or past its deadline is
// canceled, anything else failed.
func TestFailedWaitsObserved(t *testing.T) {
	m, ep := newCollector(t, lockmetrics.WithBuckets(0.5, 1, 2))
	for _, ev := range []tier.Event{
		{Kind: tier.Acquiring, Path: "/a"},
		{Kind: tier.Failed, Path: "/a", Wait: 1500 * time.Millisecond, Err: errDeadline},
		{Kind: tier.Acquiring, Path: "/a"},
		{Kind: tier.Failed, Path: "/a", Wait: 700 * time.Millisecond, Err: tier.ErrClosed},
		{Kind: tier.Failed, Path: "/a", Wait: time.Millisecond, Err: errCanceled, Try: true},
	} {
		m.Observe(ev)
	}
	ep.expect(map[string]float64{
		`tierlock_acquire_wait_seconds{lock=all,outcome=acquired}`:           0,
		`tierlock_acquire_wait_seconds{lock=all,outcome=canceled}`:           2,
		`tierlock_acquire_wait_seconds{lock=all,outcome=failed}`:             1,
		`tierlock_acquire_failures_total{lock=all,reason=deadline_exceeded}`: 1,
		`tierlock_acquire_failures_total{lock=all,reason=canceled}`:          1,
		`tierlock_acquire_failures_total{lock=all,reason=closed}`:            1,
		`tierlock_waiters{lock=all}`:                                         0,
	})
	for _, mt := range scraped(ep.scrape())["tierlock_acquire_wait_seconds"].GetMetric() {
		h := mt.GetHistogram()
		for _, lp := range mt.GetLabel() {
			if lp.GetName() == "outcome" && lp.GetValue() == "canceled" && math.Abs(h.GetSampleSum()-1.501) > 1e-9 {
				t.Errorf("canceled waits sum to %v s, want 1.501", h.GetSampleSum())
			}
		}
	}
}

// What tier returns when a wait's context ends.
var (
	errDeadline = fmt.Errorf("tier: acquire /a: %w", context.DeadlineExceeded)
	errCanceled = fmt.Errorf("tier: acquire /a: %w", context.Canceled)
)

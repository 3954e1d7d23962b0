package lockmetrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
)

// TestMain shares one real ZooKeeper among the tests and checks for leaked
// goroutines.
func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

// endpoint serves reg through a real promhttp handler on 127.0.0.1:0 and
// scrapes it over HTTP, as Prometheus would.
type endpoint struct {
	t   testing.TB
	srv *httptest.Server
}

func serve(t testing.TB, reg *prometheus.Registry) *endpoint {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return &endpoint{t: t, srv: srv}
}

// scrape fetches and parses the exposition text.
func (e *endpoint) scrape() map[string]*dto.MetricFamily {
	e.t.Helper()
	resp, err := http.Get(e.srv.URL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("scrape: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		e.t.Fatalf("parse the exposition: %v", err)
	}
	return fams
}

// scraped is one scrape, read by metric name and labels.
type scraped map[string]*dto.MetricFamily

// value returns the value of the series of family name whose labels
// include want ("k=v" pairs), or -1 when there is none. Histograms give
// their sample count.
func (s scraped) value(name string, want ...string) float64 {
	f := s[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		for _, kv := range want {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName()+"="+lp.GetValue() == kv {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

// labelValues lists the values label takes in family name.
func (s scraped) labelValues(name, label string) map[string]bool {
	out := map[string]bool{}
	if f := s[name]; f != nil {
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label {
					out[lp.GetValue()] = true
				}
			}
		}
	}
	return out
}

// expect checks the scraped values of name (with labels) against want.
func (e *endpoint) expect(want map[string]float64) {
	e.t.Helper()
	s := scraped(e.scrape())
	for key, v := range want {
		name, labels := splitKey(key)
		if got := s.value(name, labels...); got != v {
			e.t.Errorf("%s = %v, want %v", key, got, v)
		}
	}
}

// eventually waits until the scraped values match want.
func (e *endpoint) eventually(what string, want map[string]float64) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := scraped(e.scrape())
		diff := ""
		for key, v := range want {
			name, labels := splitKey(key)
			if got := s.value(name, labels...); got != v {
				diff += fmt.Sprintf(" %s=%v (want %v)", key, got, v)
			}
		}
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: still%s", what, diff)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// splitKey splits "name{k=v,k=v}" into the name and its label pairs.
func splitKey(key string) (string, []string) {
	for i := range key {
		if key[i] == '{' {
			var labels []string
			start := i + 1
			for j := start; j < len(key); j++ {
				if key[j] == ',' || key[j] == '}' {
					labels = append(labels, key[start:j])
					start = j + 1
				}
			}
			return key[:i], labels
		}
	}
	return key, nil
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

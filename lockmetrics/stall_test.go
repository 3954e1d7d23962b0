package lockmetrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierlock/tierlock/lockmetrics"
	"github.com/tierlock/tierlock/zklock"
)

// A stall adds its locks to stalled_locks and counts once in
// stalls_total; its end takes them away, with the connection said.
func TestStallHandlerCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := lockmetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := m.StallHandler()
	gauge := func(conn string) float64 { return gaugeValue(t, reg, "tierlock_stalled_locks", conn) }
	h(zklock.Stall{Session: 7, Locks: []string{"/a", "/b", "/c"}, Disconnected: true})
	h(zklock.Stall{Session: 9, Locks: []string{"/d"}})
	if gauge("none") != 3 || gauge("unknown") != 1 || gaugeValue(t, reg, "tierlock_stalls_total", "none") != 1 {
		t.Fatalf("after two stalls: none %v, unknown %v", gauge("none"), gauge("unknown"))
	}
	h(zklock.Stall{Session: 7, Locks: []string{"/a", "/b", "/c", "/e"}, Disconnected: true, Ended: true})
	h(zklock.Stall{Session: 9, Locks: []string{"/d"}, Ended: true})
	if gauge("none") != 0 || gauge("unknown") != 0 || gaugeValue(t, reg, "tierlock_stalls_total", "unknown") != 1 {
		t.Fatalf("after their ends: none %v, unknown %v", gauge("none"), gauge("unknown"))
	}
}

// gaugeValue is the value of name's series whose connection label is conn.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name, conn string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "connection" && l.GetValue() == conn {
					if g := m.GetGauge(); g != nil {
						return g.GetValue()
					}
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{connection=%q}", name, conn)
	return 0
}

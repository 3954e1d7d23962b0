package session

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A lapse of the lease under way when the floor closes is told over, as
// an outage is ("no connection to ZooKeeper until the session was
// closed"): the explorer's (e) found it never was (seed 2 of
// TestLeaseExplore), the log's last word on the session being that grants
// wait until it is confirmed. A hold is granted, the follower is cut from
// the leader, the lease lapses (the syncs wait at the link; under
// WithLossOnExpiryOnly the hold outlives the drop 2T/3 after the last
// byte, and the lease reaches 9T/8 = 4.5 s past the last touch shown,
// before the cut), and the floor closes before the link heals.
func TestLeaseLapseToldOverAtClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := leaseConfig{asked: 4 * time.Second, T: 4 * time.Second, tick: 400 * time.Millisecond,
			orphanAfter: 8 * time.Second, expiryOnly: true}
		steps := []step{{kind: "aq", at: 100 * time.Millisecond}, {kind: "pt", at: 500 * time.Millisecond, d: 6 * time.Second},
			{kind: "cl", at: 5 * time.Second}}
		o := runConfig(cfg, 1, steps, true)
		var lapsed, over bool
		for _, l := range o.trace {
			lapsed = lapsed || strings.Contains(l, "log: "+lapseBegun)
			over = over || strings.Contains(l, "log: "+lapseClosed)
		}
		if !lapsed || !over || failsWith(o, "(e)") {
			t.Errorf("lapse told begun %v, told over at Close %v; failures: %v\n%s", lapsed, over, o.fails, strings.Join(o.trace, "\n"))
		}
	})
}

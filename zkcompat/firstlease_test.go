package zkcompat_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

// The drop-in's session cannot see the connection's handshake (it runs on
// the caller's connection, made by zk.Connect), so the first lease of a
// connection is shown by two of its own syncs across a follower's ping
// interval, π = 5/8 of the servers' tick, which the session reads from a
// server (a probe asking for less than its minSessionTimeout: two ticks),
// not taken as half the session timeout (docs/lease.md): 125 ms on the
// test server's 200-ms tick, where it was 1.25 s here. A first Lock granted
// sooner would be trusting a touch the lease rule cannot show; the second
// lock, on the warm session, does not wait again (neither is timed from
// above: a loaded machine may slow them). docs/interop.md states the cost.
func TestFirstLockWaitsForTheLease(t *testing.T) {
	const timeout = 4 * time.Second
	c := connTo(t, zktest.Servers(t), timeout)
	conf, err := zktest.Cluster(t).Conf(context.Background(), 0)
	if err != nil {
		t.Skipf("the server's tickTime cannot be read (conf): %v", err)
	}
	tick, err := strconv.Atoi(conf["tickTime"])
	if err != nil {
		t.Fatalf("the server's tickTime %q: %v", conf["tickTime"], err)
	}
	pi := time.Duration(tick) * time.Millisecond * 5 / 8
	path := zktest.Path(t)
	l := zkcompat.NewLock(c, path, zk.WorldACL(zk.PermAll))
	start := time.Now()
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	first := time.Since(start)
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if first < pi {
		t.Fatalf("the first Lock on a connection was granted after %v, before π = %v: no lease could be shown yet", first, pi)
	}
	start = time.Now()
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	t.Logf("first Lock %v (π %v), second %v", first, pi, time.Since(start))
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// The first lease's chain needs three syncs (lease.go): one whose answer
// shows a touch, one written π after that answer, one sent after the
// second's answer. The first Lock waits for those, and no more: a sync
// queued before the second may be written carries nothing, so the session
// waits for that moment instead of re-sending. The test counts the syncs
// the connection carried from NewLock to the grant: 7 or 8 when each sync
// was re-sent after a growing pause (the first Lock then 190-210 ms on a
// 200-ms tick, 130 ms now). A count, not a time: a loaded machine only
// delays the chain.
func TestFirstLockSendsOnlyTheChain(t *testing.T) {
	const opSync = 9
	c, w := tapped(t)
	syncs := func() int64 {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.reqs[opSync]
	}
	before := syncs()
	l := zkcompat.NewLock(c, zktest.Path(t), zk.WorldACL(zk.PermAll))
	start := time.Now()
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	took, n := time.Since(start), syncs()-before
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	t.Logf("first Lock %v, %d syncs", took, n)
	// Three for the chain, and one renewal the session's renewer may send
	// while a lock waits (renew.go), if the chain took a period.
	if n > 4 {
		t.Errorf("the first Lock's grant took %d syncs; its chain needs 3", n)
	}
}

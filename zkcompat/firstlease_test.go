package zkcompat_test

import (
	"context"
	"slices"
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

// A session with no lock proves itself once every idle period (renew.go's
// idleEvery, T/4 at the most and T/32 at the least), so that a lock after
// a quiet spell is granted at once; that is its idle cost. The renewer's
// "at once" clause, meant for a lock that woke a quiet session, also fired
// after each idle sync's answer: every idle sync was followed by another
// 2-3 ms later, twice the cost (24 syncs in 12 idle seconds with T = 4 s,
// where idleEvery is 958 ms). No two idle syncs closer than T/32.
func TestIdleSessionSyncsEveryIdlePeriod(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: idle periods of a quiet session, about 13 s")
	}
	const timeout, quiet = 4 * time.Second, 12 * time.Second // tapped's timeout
	c, w := tapped(t)
	l := zkcompat.NewLock(c, zktest.Path(t), zk.WorldACL(zk.PermAll))
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the lock's own syncs over
	w.mu.Lock()
	from := len(w.syncs)
	w.mu.Unlock()
	time.Sleep(quiet)
	w.mu.Lock()
	syncs := slices.Clone(w.syncs[from:])
	w.mu.Unlock()
	if len(syncs) == 0 {
		t.Fatalf("no sync in %v quiet: the lease is not kept while idle", quiet)
	}
	var close int
	for i := 1; i < len(syncs); i++ {
		if syncs[i].Sub(syncs[i-1]) < timeout/32 {
			close++
		}
	}
	t.Logf("%d syncs in %v quiet, %d of them within T/32 of the one before", len(syncs), quiet, close)
	if close > 0 {
		t.Errorf("%d of %d idle syncs came within T/32 = %v of the one before", close, len(syncs), timeout/32)
	}
}

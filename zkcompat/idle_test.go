package zkcompat_test

import (
	"context"
	"flag"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

var idleSpell = flag.Duration("idle.spell", 0, "TestLockAfterIdle: the quiet spell before the timed Locks (0: skip the test)")

// A connection's session lives as long as the connection: after a quiet
// spell of -idle.spell, the drop-in's Lock is granted on its create's
// answer, as zk.Lock's is, with no lease to prove again (that would take
// π = 5/8 of the servers' tick at least: TestFirstLockWaitsForTheLease).
// Both are timed side by side, each on its own connection warmed by one
// Lock before the spell. Behind a flag (a spell of minutes), so not in
// make test; docs/interop.md gives its figures:
//
//	TIERLOCK_ZK_SERVERS=127.0.0.1:PORT go test -count=1 -v -run TestLockAfterIdle ./zkcompat -idle.spell 5m
func TestLockAfterIdle(t *testing.T) {
	if *idleSpell <= 0 {
		t.Skip("-idle.spell not set")
	}
	conf, err := zktest.Cluster(t).Conf(context.Background(), 0)
	if err != nil {
		t.Skipf("the server's tickTime cannot be read (conf): %v", err)
	}
	tick, err := strconv.Atoi(conf["tickTime"])
	if err != nil {
		t.Fatalf("the server's tickTime %q: %v", conf["tickTime"], err)
	}
	pi := time.Duration(tick) * time.Millisecond * 5 / 8
	c, g := dropInConn(t, zktest.Servers(t), 10*time.Second), connTo(t, zktest.Servers(t), 10*time.Second) // each as its users connect
	p := zktest.Path(t)
	drop, gozk := zkcompat.NewLock(c, p+"-dropin", acl), zk.NewLock(g, p+"-zklock", acl)
	timed := func(l interface{ Lock() error }, u interface{ Unlock() error }) time.Duration {
		start := time.Now()
		if err := l.Lock(); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if err := u.Unlock(); err != nil {
			t.Fatal(err)
		}
		return took
	}
	firstDrop, firstZk := timed(drop, drop), timed(gozk, gozk)
	t.Logf("first Lock on a connection: drop-in %v, zk.Lock %v (π %v)", firstDrop, firstZk, pi)
	time.Sleep(*idleSpell)
	afterDrop, afterZk := timed(drop, drop), timed(gozk, gozk)
	t.Logf("Lock after %v idle: drop-in %v, zk.Lock %v", *idleSpell, afterDrop, afterZk)
	if afterDrop >= pi {
		t.Errorf("the drop-in's Lock after %v idle took %v, π or more: a lease proved again?", *idleSpell, afterDrop)
	}
}

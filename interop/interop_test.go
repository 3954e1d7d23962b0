package interop_test

import (
	"context"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/peers"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
)

// tierlock with each peer alone, so that a failure names its peer: a
// strict and a hand-off tierlock process and the peer, 3 s on one path.
func TestPairs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Curator's and kazoo's peers, 3 s each, about 13 s")
	}
	for _, peer := range []member{
		{famCurator, 4},
		{famKazoo, 4},
		{famGozk, 4},
		{famZkcompat, 4},
	} {
		t.Run(peer.family, func(t *testing.T) {
			o := runFleet(t, 3*time.Second, member{famTier, 4}, member{famTierHandoff, 4}, peer)
			requireExclusion(t, o)
		})
	}
}

// Every family on one path at once, minus the one pair that cannot share a
// path whatever tierlock does (TestCuratorAndKazooConflict): one fleet with
// Curator, one with kazoo.
func TestMixedFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Curator's and kazoo's peers, about 9 s")
	}
	for _, peer := range []string{famCurator, famKazoo} {
		t.Run(peer, func(t *testing.T) {
			o := runFleet(t, 4*time.Second,
				member{famTier, 4}, member{famTierHandoff, 4}, member{famGozk, 4},
				member{famZkcompat, 4}, member{peer, 4})
			requireExclusion(t, o)
		})
	}
}

// A fleet migrating from zk.Lock to the drop-in: two processes still on
// zk.Lock and two on zkcompat, each with one handle per goroutine.
func TestDropInBesideZkLock(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a fleet of four processes, about 3 s")
	}
	o := runFleet(t, 3*time.Second, member{famGozk, 4}, member{famZkcompat, 4}, member{famGozk, 4}, member{famZkcompat, 4})
	requireExclusion(t, o)
}

// kazoo as it comes counts only its own "__lock__" nodes as contenders, so
// without extra_lock_patterns=("-lock-",) it takes the lock while tierlock
// holds it. README's interop section shows this; the test keeps it true,
// deterministically: tierlock holds the path, and a kazoo acquisition
// started after it returns while tierlock still holds. (A fleet of both
// looping for 2 s showed it only when they happened to interleave so; on a
// busy machine, 24 tierlock holds in one run never did.)
func TestKazooWithoutExtraPatterns(t *testing.T) {
	requirePeers(t, []member{{famKazooNoExtra, 1}})
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	ctx := zktest.Context(t, 2*time.Minute)
	l, err := tier.New(zktest.Connect(t, servers), path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kazoo := startPeer(t, ctx, peers.Kazoo, servers, path, peers.KazooNoExtra)
	wait, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := kazoo.Acquire(wait, 0, 0); err != nil {
		t.Fatalf("kazoo without extra_lock_patterns waited while tierlock held the path (%v): the README's warning is out of date", err)
	}
	if held.Err() != nil {
		t.Fatalf("tierlock's hold ended while kazoo acquired: %v", context.Cause(held))
	}
	if err := kazoo.Release(0, 0); err != nil {
		t.Error(err)
	}
	if err := l.Release(held); err != nil {
		t.Error(err)
	}
}

// Curator 5.4 sorts a lock path's children by the text after "lock-" and
// keeps names without it (kazoo's "<hex>__lock__<seq>") whole, so every
// kazoo node sorts after every Curator-style node whatever its sequence:
// a Curator waiter takes the lock while a kazoo process holds it. No
// setting of either library avoids this, so Curator and kazoo must not
// share a lock path; tierlock shares one with each. This test keeps the
// README's warning true, deterministically: kazoo holds the path, and a
// Curator acquisition started after it returns while kazoo still holds.
// (A fleet of both looping for 2 s showed it only when they happened to
// interleave so; on a busy machine, 24 holds in one run never did.)
func TestCuratorAndKazooConflict(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Curator's and kazoo's peers, about 5 s")
	}
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	ctx := zktest.Context(t, 2*time.Minute)
	kazoo := startPeer(t, ctx, peers.Kazoo, servers, path)
	if _, err := kazoo.Acquire(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	curator := startPeer(t, ctx, peers.Curator, servers, path)
	wait, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := curator.Acquire(wait, 0, 0); err != nil {
		t.Fatalf("Curator waited while kazoo held the path (%v): the README's warning is out of date", err)
	}
	for _, p := range []*peers.Proc{curator, kazoo} {
		if err := p.Release(0, 0); err != nil {
			t.Error(err)
		}
	}
}

// A kazoo ReadLock held by another process keeps tierlock's (exclusive)
// lock out until the reader releases it. (Readers and tierlock are not run
// in a loop here: kazoo 2.8's ReadLock waits for the last writer node on
// the path, even one queued after its own node, so a reader that waits
// while writers keep queueing behind it waits for ever, with kazoo's own
// WriteLock as with tierlock.)
func TestKazooReadLockKeepsTierlockOut(t *testing.T) {
	requirePeers(t, []member{{famKazooRead, 1}})
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	ctx := zktest.Context(t, time.Minute)
	reader, err := peers.Serve(ctx, peers.Kazoo, cacheDir, servers, 10*time.Second, 1, []string{path}, peers.KazooRead)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := reader.Close(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := reader.Acquire(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	s := zktest.Connect(t, servers)
	l, err := tier.New(s, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if held, ok, err := l.TryAcquire(ctx); err != nil || ok {
		if ok {
			l.Release(held)
		}
		t.Fatalf("TryAcquire while a kazoo reader holds the path = %v, %v; want false", ok, err)
	}
	got := make(chan error, 1)
	go func() {
		held, err := l.Acquire(ctx)
		if err == nil {
			err = l.Release(held)
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Acquire returned (%v) while the kazoo reader held the path", err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := reader.Release(0, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("tierlock did not acquire after the kazoo reader released")
	}
}

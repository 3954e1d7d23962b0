package lockmetrics_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// A revocation request and a guarded write refused as stale are counted,
// once each, under the lock's name: the counters follow tier's Revoked and
// TxnFailed events.
func TestScrapeRevocationsAndRefusedWrites(t *testing.T) {
	m, ep := newCollector(t)
	servers := zktest.Servers(t)
	s := zktest.Connect(t, servers)
	admin := zktest.Connect(t, servers)
	path := zktest.Path(t)
	l := newLock(t, s, path, tier.WithObserver(m.Observe), tier.WithRevocable())
	ctx := ctxT(t, 30*time.Second)

	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zklock.RevokeHolder(ctx, admin, path); err != nil {
		t.Fatal(err)
	}
	<-l.Revoked(held)
	ep.eventually("the revocation", map[string]float64{
		`tierlock_revocations_total{lock=all}`:            1,
		`tierlock_guarded_write_failures_total{lock=all}`: 0,
	})

	// The node deleted behind the holder's back: its next guarded write
	// is refused (by the client, which saw the deletion, or by the server).
	for _, c := range zktest.Children(t, admin.Conn(), path) {
		if err := admin.Conn().Delete(path+"/"+c, -1); err != nil {
			t.Fatal(err)
		}
	}
	<-held.Done()
	_, err = l.Txn(held, &zk.CreateRequest{Path: path + "-data", Acl: zk.WorldACL(zk.PermAll)})
	if !errors.Is(err, tier.ErrLockLost) {
		t.Fatalf("Txn of a lost hold: %v", err)
	}
	ep.eventually("the refused write", map[string]float64{
		`tierlock_revocations_total{lock=all}`:            1,
		`tierlock_guarded_write_failures_total{lock=all}`: 1,
	})
	if err := l.Release(held); !errors.Is(err, tier.ErrLockLost) {
		t.Fatalf("Release of the lost hold: %v", err)
	}
}

// The read/write lock and the semaphore take the collector's observer too
// (tier.WithObserver on every tier constructor): their holds count in the
// holders gauge and their acquisitions in the counters.
func TestScrapeRecipes(t *testing.T) {
	m, ep := newCollector(t)
	s := zktest.Connect(t, zktest.Servers(t))
	ctx := ctxT(t, 30*time.Second)
	rw, err := tier.NewRWLock(s, zktest.Path(t), tier.WithObserver(m.Observe))
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	sem, err := tier.NewSemaphore(s, zktest.Path(t), 2, tier.WithObserver(m.Observe))
	if err != nil {
		t.Fatal(err)
	}
	defer sem.Close()
	w, err := rw.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, err := sem.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	ep.eventually("a write hold and a lease", map[string]float64{`tierlock_holders{lock=all}`: 2})
	rw.Release(w)
	sem.Release(h)
	ep.eventually("both released", map[string]float64{`tierlock_holders{lock=all}`: 0})
}

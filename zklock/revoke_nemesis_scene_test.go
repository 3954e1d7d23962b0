package zklock_test

import (
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// A request written while the holder's connection is down reaches it.
// Under WithLossOnExpiryOnly a short outage leaves the hold alone, so the
// request meets a live hold.
//
//   - partition: the connection drops and new ones are refused; the
//     request is written while the client has no connection. After the
//     reconnect go-zookeeper re-arms the own-node watch with setWatches
//     (relative to the last zxid it saw), and the server fires it for the
//     change it missed.
//   - blackhole: nothing crosses the connection, which stays open; the
//     server's notification is held in the network and must still be
//     acted on when traffic flows again (healed before the client's read
//     timeout, two thirds of the session timeout, would notice).
func TestRevokeAcrossDisconnection(t *testing.T) {
	zktest.TracedStep(t)
	for _, fault := range []string{"partition", "blackhole"} {
		t.Run(fault, func(t *testing.T) {
			servers := zktest.Servers(t)
			px := proxyTo(t, servers[0])
			hs := connect(t, []string{px.Addr()}, zklock.WithLossOnExpiryOnly())
			p := zktest.Path(t)
			l := newLock(t, hs, p, zklock.WithRevocable())
			rs := connect(t, servers)
			ctx := ctxT(t, 30*time.Second)
			h, err := l.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, 5*time.Second, "own-node watch", func() bool { return watchersOf(t, h.Node()) == 1 })
			if fault == "partition" {
				px.Partition(0)
				eventually(t, 10*time.Second, "holder disconnected", func() bool { return hs.State() != zklock.StateConnected })
			} else {
				px.Blackhole()
			}
			if err := zklock.RevokeNode(ctx, rs, h.Node()); err != nil {
				t.Fatal(err)
			}
			if fault == "blackhole" {
				time.Sleep(200 * time.Millisecond) // the notification is on its way, and held
			}
			if isClosed(h.Revoked()) {
				t.Fatal("revocation seen through the fault")
			}
			px.Heal()
			select {
			case <-h.Revoked():
			case <-ctx.Done():
				t.Fatalf("revocation written during the fault not delivered after it: state %v, err %v, watchers %d",
					hs.State(), h.Err(), watchersOf(t, h.Node()))
			}
			if isClosed(h.Lost()) {
				t.Fatalf("hold lost: %v", h.Err())
			}
			if err := h.Release(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

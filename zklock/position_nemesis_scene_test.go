package zklock_test

import (
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// Position reports through faults on the waiter's connection:
//
//   - drop: the connection is cut and comes back in the same session; the
//     node stays queued, and the reports go on about that node;
//   - expiry: the waiter is cut off until the server expires its session;
//     the node goes with the session, Acquire queues a new one in the new
//     session, and the reports name the new node (Node tells them apart).
//
// Either way the last report is Leads on the node Acquire returns holding,
// and nothing is told after Acquire returned.
func TestPositionAcrossFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a fault scene, about 6 s")
	}
	zktest.TracedStep(t)
	for _, fault := range []string{"drop", "expiry"} {
		t.Run(fault, func(t *testing.T) {
			servers := zktest.Servers(t)
			p := zktest.Path(t)
			ctx := ctxT(t, 60*time.Second)
			admin := connect(t, servers)
			a := newLock(t, admin, p)
			px := proxyTo(t, servers[0])
			ws := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(2*time.Second), zklock.WithLossOnExpiryOnly())
			var log positionLog
			w := newLock(t, ws, p, zklock.WithRecheckInterval(100*time.Millisecond), zklock.WithPositionHandler(log.handle))
			ah, err := a.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan acquired, 1)
			go func() {
				h, err := w.Acquire(ctx)
				log.returned.Store(true)
				done <- acquired{h, err}
			}()
			eventually(t, 10*time.Second, "the waiter's first report", func() bool { _, ok := log.last(); return ok })
			first, _ := log.last()
			if first.Ahead != 1 || first.Leads {
				t.Fatalf("first report %+v, want 1 ahead", first)
			}
			switch fault {
			case "drop":
				id := ws.SessionID()
				px.DropAll()
				eventually(t, 10*time.Second, "reconnected", func() bool { return ws.State() == zklock.StateConnected })
				if ws.SessionID() != id {
					t.Fatalf("session changed on a drop: %x -> %x", id, ws.SessionID())
				}
			case "expiry":
				px.Partition(0)
				eventually(t, 20*time.Second, "the waiter's node expired", func() bool {
					return len(children(t, admin.Conn(), p)) == 1 // the holder's alone
				})
				px.Heal()
				eventually(t, 20*time.Second, "a new node queued", func() bool {
					l, _ := log.last()
					return l.Node != "" && l.Node != first.Node
				})
			}
			if err := ah.Release(); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			last, _ := log.last()
			if !last.Leads || last.Node != r.h.Node() {
				t.Fatalf("last report %+v, holding %s", last, r.h.Node())
			}
			nodes := map[string]bool{}
			for _, r := range log.all() {
				nodes[r.Node] = true
			}
			switch {
			case fault == "drop" && len(nodes) != 1:
				t.Fatalf("a drop replaced the node: reports name %v", nodes)
			case fault == "expiry" && len(nodes) != 2:
				t.Fatalf("after an expiry the reports name %v, want the old and the new node", nodes)
			}
			if n := log.late.Load(); n != 0 {
				t.Fatalf("%d reports after Acquire returned", n)
			}
			if err := r.h.Release(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

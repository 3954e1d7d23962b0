package wire

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestSlowSessionCallbackKeepsTheEdge: go-zookeeper v1.0.4 reads lastZxid
// for setWatches on its connecting goroutine while its receive loop writes
// it for each reply (see tappedConn.Read), and the tap holds a
// reconnection's first reply until setWatches is written, so that the race
// detector sees the two ordered. Here, at the reconnection:
//   - the session's event callback, which go-zookeeper runs on the
//     connecting goroutine before it starts the receive loop, takes twice
//     the hold's bound, as the floor's did when it waited for its state
//     mutex in a loaded race run;
//   - a read made during the reconnection goes out first, and its reply
//     comes back while setWatches' write is held for 50 ms (the tap's write
//     hook), so that nothing else orders the two.
//
// Under -race it failed on the bound counted from the handshake ("race
// detected during execution of test": the bound had passed before the
// receive loop began, and the reply was read before setWatches went out).
// Counted from the receive loop's first read, the hold lasts until
// setWatches is written. It tolerates a stall under 200 ms between that
// read and the write. Without -race it checks that the watch is re-armed
// and the read answered.
func TestSlowSessionCallbackKeepsTheEdge(t *testing.T) {
	p := newPeer(t)
	var sessions atomic.Int32
	slow := func(ev zk.Event) {
		if ev.Type == zk.EventSession && ev.State == zk.StateHasSession && sessions.Add(1) > 1 {
			time.Sleep(2 * setWatchesWait) // a reconnection's callback, as slow as a loaded floor's
		}
	}
	conn := p.connect(Config{}, slow)
	if _, _, _, err := conn.GetW("/w"); err != nil { // a watch: the reconnection re-arms it
		t.Fatal(err)
	}
	p.tap.SetOnWrite(func(op int32, _ []byte) error {
		if op == OpSetWatches {
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	})
	before := len(p.requests())
	p.drop()
	// A read made while the client reconnects: queued until the new
	// connection, it is written before setWatches. One that met the
	// dropped connection, or the flush before go-zookeeper's pause, fails;
	// it is made again.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		_, _, err := conn.Get("/x")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the read during the reconnection, still failing after 10 s: %v", err)
		}
	}
	waitFor(t, "setWatches", func() bool { return sent(p, before, OpSetWatches) })
}

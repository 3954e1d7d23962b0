package wire

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The order every new connection keeps (order.go), driven through
// go-zookeeper v1.0.4's own reconnection: its event callback, its re-sent
// credentials, its send loop and setWatches, against the peer. A request
// of the tap's made as soon as the session's event callback says
// StateHasSession (as the floor's waiters make their re-listings) goes
// out after every re-sent credential's answer and after go-zookeeper's
// setWatches, and waits for nothing more: with setWatchesWait at a minute,
// a wait for a setWatches that never comes fails the scene.
func TestNewConnectionKeepsItsOrder(t *testing.T) {
	defer func(d time.Duration) { setWatchesWait = d }(setWatchesWait)
	setWatchesWait = time.Minute
	for _, sc := range []struct {
		name    string
		creds   int
		watches string // "": none; "held": a watch go-zookeeper holds; "fired": one that fired
	}{
		{"nothing to re-send", 0, ""},
		{"two credentials", 2, ""},
		{"a watch", 0, "held"},
		{"a watch that fired", 0, "fired"},
		{"credentials and watches", 2, "held"},
	} {
		t.Run(sc.name, func(t *testing.T) {
			p := newPeer(t)
			var (
				mu       sync.Mutex
				sessions int
			)
			answered := make(chan error, 4)
			conn := p.connect(Config{}, func(ev zk.Event) {
				if ev.Type != zk.EventSession || ev.State != zk.StateHasSession {
					return
				}
				mu.Lock()
				sessions++
				again := sessions > 1
				mu.Unlock()
				if again { // as a waiter woken by the event: on a goroutine of its own
					go func() {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						defer cancel()
						_, err := p.tap.Call(ctx, OpMultiRead, AppendListings(nil, nil))
						answered <- err
					}()
				}
			})
			if _, _, err := conn.Exists("/x"); err != nil { // the first connection is up
				t.Fatal(err)
			}
			for i := range sc.creds {
				if err := conn.AddAuth("digest", fmt.Appendf(nil, "u%d:p", i)); err != nil {
					t.Fatal(err)
				}
			}
			switch sc.watches {
			case "held":
				if _, _, _, err := conn.GetW("/w"); err != nil {
					t.Fatal(err)
				}
			case "fired":
				_, _, ch, err := conn.GetW("/w")
				if err != nil {
					t.Fatal(err)
				}
				p.push(int32(zk.EventNodeDataChanged), "/w")
				<-ch
			}
			before := len(p.requests())
			p.drop()
			if err := <-answered; err != nil {
				t.Fatalf("the tap's request on the new connection: %v", err)
			}
			ops := opsOf(p.requests()[before:])
			read := slices.Index(ops, OpMultiRead)
			if auths := countOp(ops[:read], opSetAuth); auths != sc.creds {
				t.Errorf("the new connection wrote %v: %d credentials before the tap's multiRead, want %d", ops, auths, sc.creds)
			}
			if set := slices.Contains(ops[:read], OpSetWatches); set != (sc.watches == "held") {
				t.Errorf("the new connection wrote %v: go-zookeeper's setWatches before the tap's multiRead %v, want %v", ops, set, sc.watches == "held")
			}
			if got := p.tap.creds.Load(); got != int32(sc.creds) {
				t.Errorf("the tap counts %d credentials go-zookeeper re-sends, want %d", got, sc.creds)
			}
		})
	}
}

// opsOf returns the opcodes of frames.
func opsOf(frames [][]byte) []int32 {
	ops := make([]int32, len(frames))
	for i, f := range frames {
		ops[i] = opcode(f)
	}
	return ops
}

func countOp(ops []int32, op int32) int {
	n := 0
	for _, o := range ops {
		if o == op {
			n++
		}
	}
	return n
}

package zklock_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The contract pipelining rests on (see wire.go): go-zookeeper writes each
// request with one Write of exactly one frame, from one send loop, in the
// order requests were queued. If an upgrade batched requests into one
// Write, or split one across several, the wire tap would stop seeing
// requests go out and pipelining would silently turn off (or, worse,
// mis-order): this test fails instead. A burst of concurrent requests is
// what would make a batching client batch.
func TestPipelineContractOneRequestPerWrite(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	p := zktest.Path(t)
	l := newLock(t, s, p)
	ctx := ctxT(t, 20*time.Second)
	h, err := l.Acquire(ctx) // makes the parents
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	var writes, bad atomic.Int64
	var mu sync.Mutex
	var firstBad string
	zklock.SetWriteHook(s, func(op int32, b []byte) error {
		writes.Add(1)
		if len(b) < 4 || int(binary.BigEndian.Uint32(b[:4])) != len(b)-4 {
			if bad.Add(1) == 1 {
				mu.Lock()
				firstBad = fmt.Sprintf("write of %d bytes framing %d", len(b), binary.BigEndian.Uint32(b[:4]))
				mu.Unlock()
			}
		}
		return nil
	})
	defer zklock.SetWriteHook(s, nil)
	before := zklock.Written(s, zklock.OpGetChildren2)
	const n = 200
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := s.Conn().Children(p); err != nil {
				t.Error(err)
			}
		}()
	}
	zktest.Wait(t, "the listings", &wg)
	if b := bad.Load(); b > 0 {
		t.Fatalf("%d of %d writes were not exactly one request (first: %s): pipelining's assumption broke", b, writes.Load(), firstBad)
	}
	if got := zklock.Written(s, zklock.OpGetChildren2) - before; got != n {
		t.Fatalf("the tap saw %d of %d listings go out", got, n)
	}
	// And an acquisition's create is seen on the wire, so its listing goes
	// out right behind it.
	h, err = l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

// WithoutPipelining: everything still works, one step at a time, and a
// session never has two nodes queued on one path.
func TestWithoutPipelining(t *testing.T) {
	s := connect(t, zktest.Servers(t), zklock.WithoutPipelining())
	p := zktest.Path(t)
	l := newLock(t, s, p)
	ctx := ctxT(t, 20*time.Second)
	for i := 0; i < 20; i++ {
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(children(t, s.Conn(), p)); n != 1 {
			t.Fatalf("%d nodes queued by one session", n)
		}
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if got := zklock.Written(s, zklock.OpMulti); got != 0 {
		t.Fatalf("%d multi requests without pipelining", got)
	}
	eventually(t, 10*time.Second, "last node deleted", func() bool { return len(children(t, s.Conn(), p)) == 0 })
}

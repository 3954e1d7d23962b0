package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// WithJuteMaxBuffer: a session told that its servers' jute.maxbuffer is
// 256 KiB packs its writes into requests no larger (sixteen creates of 32
// KiB ACL entries, queued together, go in three requests), and refuses a
// create larger alone; a value below 64 KiB is refused.
func TestWithJuteMaxBuffer(t *testing.T) {
	for _, n := range []int{-1, 1000, 64<<10 - 1} {
		_, err := zklock.Connect(context.Background(), zktest.Servers(t), zklock.WithJuteMaxBuffer(n))
		if !errors.Is(err, zklock.ErrInvalidOption) {
			t.Errorf("WithJuteMaxBuffer(%d): %v; want ErrInvalidOption", n, err)
		}
	}
	const limit = 256 << 10
	servers := zktest.Servers(t)
	s, admin := connect(t, servers, zklock.WithJuteMaxBuffer(limit)), connect(t, servers)
	root := zktest.Path(t)
	var locks []*zklock.Lock
	for i := range 16 {
		p := fmt.Sprintf("%s/k%02d", root, i)
		if err := zkCreateAll(admin.Conn(), p); err != nil {
			t.Fatal(err)
		}
		locks = append(locks, newLock(t, s, p, zklock.WithACL(digestACL(32<<10))))
	}
	var rec requests
	defer rec.record(s)()
	ctx := ctxT(t, 20*time.Second)
	let := zklock.HoldWriterForTest()
	defer let()
	var got []<-chan acquired
	for _, l := range locks {
		got = append(got, goAcquire(ctx, l))
	}
	eventually(t, 5*time.Second, "the creates queued", func() bool { return zklock.QueuedWritesForTest(s) == len(locks) })
	let()
	for _, c := range got {
		r := <-c
		if r.err != nil {
			t.Fatal(r.err)
		}
		defer r.h.Release()
	}
	sizes, _ := rec.take()
	for _, z := range sizes {
		if z > limit {
			t.Errorf("a request of %d bytes, over the session's jute.maxbuffer (%d)", z, limit)
		}
	}
	if len(sizes) != 3 {
		t.Errorf("16 creates of about 32 KiB in %d requests %v; within 256 KiB, 3", len(sizes), sizes)
	}
	_, err := newLock(t, s, root+"/big", zklock.WithACL(digestACL(limit))).Acquire(ctx)
	if !errors.Is(err, zklock.ErrInvalidOption) {
		t.Errorf("a create over the session's jute.maxbuffer: %v; want ErrInvalidOption", err)
	}
}

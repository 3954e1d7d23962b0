package main

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// break refuses without -yes and leaves the node; with -yes it deletes the
// holder's node, the holder is told (ErrNodeDeleted) and the waiter gets
// the lock. A NODE argument deletes that node, here a waiter's.
func TestBreak(t *testing.T) {
	p := zktest.Path(t)
	ctx := zktest.Context(t, 30*time.Second)
	s1, s2, s3 := connect(t), connect(t), connect(t)
	a := acquire(t, ctx, newLock(t, s1, p, zklock.WithLabel("stuck")))
	waited := acquireAsync(ctx, newLock(t, s2, p))
	waitQueue(t, s1, p, 2)

	tierlock(t, "break", p).want(t, exitUsage, "-yes")
	tierlock(t, "break", "-yes=false", a.Node()).want(t, exitUsage, "-yes")
	waitQueue(t, s1, p, 2) // still there

	r := tierlock(t, "break", "-json", p, "-yes")
	r.want(t, exitOK)
	var got struct{ Deleted nodeView }
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Deleted.Node != a.Node() || got.Deleted.Label != "stuck" || !got.Deleted.Holder {
		t.Fatalf("break -json: %v %s", err, r.stdout)
	}
	select {
	case <-a.Lost():
		if !errors.Is(a.Err(), zklock.ErrNodeDeleted) {
			t.Fatalf("holder's loss: %v, want ErrNodeDeleted", a.Err())
		}
	case <-ctx.Done():
		t.Fatal("holder not told of the break")
	}
	b := held(t, waited)

	// A waiter's node, by name.
	cw := acquireAsync(ctx, newLock(t, s3, p))
	waitQueue(t, s1, p, 2)
	ps, err := zklock.ListParticipants(ctx, s1, p)
	if err != nil || len(ps) != 2 {
		t.Fatalf("%+v %v", ps, err)
	}
	tierlock(t, "break", "-yes", p+"/"+ps[1].Node).want(t, exitOK, "deleted "+p+"/"+ps[1].Node+" (waiting")
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	// The waiter whose node was broken queues again and gets its turn.
	held(t, cw)
	tierlock(t, "break", "-yes", p+"/"+ps[1].Node).want(t, exitNoNode, "does not exist")
}

// break refuses to pick among several readers.
func TestBreakSeveralReaders(t *testing.T) {
	p := zktest.Path(t)
	ctx := zktest.Context(t, 30*time.Second)
	for range 2 {
		rw, err := zklock.NewRWLock(connect(t), p)
		if err != nil {
			t.Fatal(err)
		}
		defer rw.Close()
		acquire(t, ctx, rw.ReadLock())
	}
	tierlock(t, "break", "-yes", p).want(t, exitUsage, "2 readers hold")
	tierlock(t, "revoke", p).want(t, exitOK) // revoke asks both
}

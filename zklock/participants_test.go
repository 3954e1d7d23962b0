package zklock_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// ListParticipants reports every node of a mixed read/write queue in issue
// order with its family, owner session, creation time and data, and marks
// as holders exactly the nodes that hold: the readers no writer precedes.
func TestListParticipantsReadWrite(t *testing.T) {
	servers := zktest.Servers(t)
	s1, s2 := connect(t, servers), connect(t, servers)
	p := zktest.Path(t)
	ctx := ctxT(t, 20*time.Second)
	before := time.Now().Add(-time.Second)

	rw1, err := zklock.NewRWLock(s1, p, zklock.WithLabel("r1"))
	if err != nil {
		t.Fatal(err)
	}
	defer rw1.Close()
	rw2, err := zklock.NewRWLock(s2, p, zklock.WithLabel("w2"))
	if err != nil {
		t.Fatal(err)
	}
	defer rw2.Close()
	rw3, err := zklock.NewRWLock(s2, p, zklock.WithLabel("r3"))
	if err != nil {
		t.Fatal(err)
	}
	defer rw3.Close()
	rh, err := rw1.ReadLock().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wdone := goAcquire(wctx, rw2.WriteLock())
	eventually(t, 10*time.Second, "writer queued", func() bool { return len(children(t, s1.Conn(), p)) == 2 })
	rdone := goAcquire(wctx, rw3.ReadLock())
	eventually(t, 10*time.Second, "reader queued", func() bool { return len(children(t, s1.Conn(), p)) == 3 })

	ps, err := zklock.ListParticipants(ctx, s1, p)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		family zklock.Family
		holder bool
		owner  int64
		label  string
	}{
		{zklock.FamilyCuratorRead, true, s1.SessionID(), "r1"},
		{zklock.FamilyCuratorWrite, false, s2.SessionID(), "w2"},
		{zklock.FamilyCuratorRead, false, s2.SessionID(), "r3"}, // behind the writer
	}
	if len(ps) != len(want) {
		t.Fatalf("participants %+v, want %d", ps, len(want))
	}
	for i, w := range want {
		var d struct {
			Pid   int    `json:"pid"`
			Label string `json:"label"`
		}
		_ = json.Unmarshal(ps[i].Data, &d)
		if ps[i].Family != w.family || ps[i].Holder != w.holder || ps[i].Owner != w.owner ||
			d.Label != w.label || d.Pid != os.Getpid() || ps[i].Created.Before(before) || ps[i].Created.After(time.Now()) {
			t.Errorf("participant %d: %+v (data %s), want %+v", i, ps[i], ps[i].Data, w)
		}
	}
	if ps[0].Node != path.Base(rh.Node()) {
		t.Errorf("first is %s, want the read holder %s", ps[0].Node, rh.Node())
	}
	cancel()
	<-wdone
	<-rdone
}

// A semaphore's leases are listed at <path>/leases, the first as holder.
func TestListParticipantsLeases(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	p := zktest.Path(t)
	ctx := ctxT(t, 20*time.Second)
	sem, err := zklock.NewSemaphore(s, p, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer sem.Close()
	le, err := sem.Acquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer le.Release()
	ps, err := zklock.ListParticipants(ctx, s, p+"/leases")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Family != zklock.FamilyLease || !ps[0].Holder || ps[1].Holder {
		t.Fatalf("leases %+v", ps)
	}
	// The semaphore's own path has no contenders and no leases.
	if ps, err := zklock.ListParticipants(ctx, s, p); err != nil || len(ps) != 0 {
		t.Fatalf("semaphore path: %+v %v, want nothing", ps, err)
	}
}

// Bad input gets an error, never a panic.
func TestListParticipantsBadInput(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	ctx := ctxT(t, 10*time.Second)
	//nolint:staticcheck // a nil context on purpose
	if _, err := zklock.ListParticipants(nil, s, "/x"); !errors.Is(err, zklock.ErrNilContext) {
		t.Errorf("nil ctx: %v", err)
	}
	if _, err := zklock.ListParticipants(ctx, nil, "/x"); !errors.Is(err, zklock.ErrNilSession) {
		t.Errorf("nil session: %v", err)
	}
	if _, err := zklock.ListParticipants(ctx, s, "x/"); !errors.Is(err, zklock.ErrInvalidPath) {
		t.Errorf("bad path: %v", err)
	}
	if ps, err := zklock.ListParticipants(ctx, s, zktest.Path(t)); err != nil || ps != nil {
		t.Errorf("missing path: %v %v, want an empty queue", ps, err)
	}
	closed := connect(t, zktest.Servers(t))
	closed.Close()
	if _, err := zklock.ListParticipants(ctx, closed, "/x"); !errors.Is(err, zklock.ErrSessionClosed) {
		t.Errorf("closed session: %v", err)
	}
}

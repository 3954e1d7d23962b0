package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// revoke writes Curator's __REVOKE__ into the holder's node (PATH) or the
// named node (NODE), and ls then shows the request.
func TestRevoke(t *testing.T) {
	p := zktest.Path(t)
	ctx := zktest.Context(t, 30*time.Second)
	s1, s2 := connect(t), connect(t)
	a := acquire(t, ctx, newLock(t, s1, p))
	waited := acquireAsync(ctx, newLock(t, s2, p))
	waitQueue(t, s1, p, 2)

	tierlock(t, "revoke", p).want(t, exitOK, "revocation requested: "+a.Node())
	if data, _, err := s1.Conn().Get(a.Node()); err != nil || string(data) != revokeMessage {
		t.Fatalf("holder's data %q %v, want %s", data, err, revokeMessage)
	}
	ps, err := zklock.ListParticipants(ctx, s1, p)
	if err != nil || len(ps) != 2 || string(ps[1].Data) == revokeMessage {
		t.Fatalf("the waiter was revoked too: %+v %v", ps, err)
	}
	waiterNode := p + "/" + ps[1].Node
	r := tierlock(t, "revoke", "-json", waiterNode)
	r.want(t, exitOK)
	var got struct{ Revoked []struct{ Node string } }
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got.Revoked) != 1 || got.Revoked[0].Node != waiterNode {
		t.Fatalf("revoke -json: %v %s", err, r.stdout)
	}
	tierlock(t, "ls", p).want(t, exitOK, "revocation requested")

	// The holder is untouched by the request: it releases when it wants.
	select {
	case <-a.Lost():
		t.Fatalf("holder lost the lock: %v", a.Err())
	default:
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := held(t, waited).Release(); err != nil {
		t.Fatal(err)
	}
	tierlock(t, "revoke", p).want(t, exitNoNode, "nobody holds it")
	tierlock(t, "revoke", waiterNode).want(t, exitNoNode, "node does not exist")
}

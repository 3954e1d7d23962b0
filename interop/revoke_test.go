package interop_test

import (
	"context"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/peers"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

func startCurator(t *testing.T, ctx context.Context, servers []string, path string, flags ...string) *peers.Proc {
	t.Helper()
	return startPeer(t, ctx, peers.Curator, servers, path, flags...)
}

// Curator's Revoker.attemptRevoke on a tierlock holder's node: the holder
// is told through Revoked, and its held context stays live.
func TestRevokeByCurator(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Curator's peer, about 5 s")
	}
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	ctx := zktest.Context(t, time.Minute)
	cur := startCurator(t, ctx, servers, path)
	s := zktest.Connect(t, servers)
	l, err := tier.New(s, path, tier.WithRevocable())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kids := zktest.Children(t, s.Conn(), path)
	if len(kids) != 1 {
		t.Fatalf("queue %v", kids)
	}
	if err := cur.Revoke(0, path+"/"+kids[0]); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Revoked(held):
	case <-ctx.Done():
		t.Fatal("Curator's revocation request did not reach the tierlock holder")
	}
	if held.Err() != nil {
		t.Fatalf("held context cancelled: %v", context.Cause(held))
	}
	if err := l.Release(held); err != nil {
		t.Fatal(err)
	}
}

// A Curator holder made revocable hears tierlock's RevokeHolder and
// RevokeNode: its listener fires, it releases, and the tierlock waiter
// behind it gets the lock.
func TestRevokeCuratorHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Curator's peer, about 2 s")
	}
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	ctx := zktest.Context(t, time.Minute)
	cur := startCurator(t, ctx, servers, path, peers.CuratorRevocable)
	s := zktest.Connect(t, servers)
	l, err := tier.New(s, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, how := range []string{"RevokeHolder", "RevokeNode"} {
		t.Run(how, func(t *testing.T) {
			seq, err := cur.Acquire(ctx, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() {
				held, err := l.Acquire(ctx)
				if err == nil {
					err = l.Release(held)
				}
				got <- err
			}()
			curNode := ""
			for _, c := range zktest.Children(t, s.Conn(), path) {
				if _, sq, ok := zklock.Contender(c); ok && int64(sq) == seq {
					curNode = path + "/" + c
				}
			}
			if curNode == "" {
				t.Fatalf("no node of sequence %d under %s", seq, path)
			}
			switch how {
			case "RevokeHolder":
				node, err := zklock.RevokeHolder(ctx, s, path)
				if err != nil || node != curNode {
					t.Fatalf("RevokeHolder = %q, %v; Curator holds %s", node, err, curNode)
				}
			default:
				if err := zklock.RevokeNode(ctx, s, curNode); err != nil {
					t.Fatal(err)
				}
			}
			for _, want := range []string{"revoked", "released"} {
				select {
				case n := <-cur.Notices():
					if n.Kind != want || n.Thread != 0 || n.Path != 0 {
						t.Fatalf("notice %+v, want %s", n, want)
					}
				case <-ctx.Done():
					t.Fatalf("Curator did not report %q", want)
				}
			}
			select {
			case err := <-got:
				if err != nil {
					t.Fatal(err)
				}
			case <-ctx.Done():
				t.Fatal("tierlock did not acquire after Curator released on the revocation")
			}
		})
	}
}

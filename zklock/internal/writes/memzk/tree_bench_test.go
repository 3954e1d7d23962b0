package memzk_test

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/tierlock/tierlock/zklock/internal/writes/memzk"
)

// BenchmarkMulti: the write path's usual transaction on the double, a
// lock node's create with the delete of the node before it.
func BenchmarkMulti(b *testing.B) {
	tree := memzk.New()
	all := zk.WorldACL(zk.PermAll)
	if _, err := tree.Create(1, "/lock", nil, zk.FlagPersistent, all); err != nil {
		b.Fatal(err)
	}
	prev, err := tree.Create(1, "/lock/n-", nil, zk.FlagEphemeralSequential, all)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := tree.Multi(1,
			&zk.CreateRequest{Path: "/lock/n-", Acl: all, Flags: zk.FlagEphemeralSequential},
			&zk.DeleteRequest{Path: prev, Version: -1})
		if err != nil {
			b.Fatal(err)
		}
		prev = res[0].String
	}
}

package memzk_test

import (
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/writes/memzk"
)

// A multi whose second op fails: the first reports no error, the last the
// server's RUNTIMEINCONSISTENCY, and nothing stays, not even the sequence
// number the create took.
func ExampleTree_Multi() {
	tree := memzk.New()
	all := zk.WorldACL(zk.PermAll)
	if _, err := tree.Create(1, "/lock", nil, zk.FlagPersistent, all); err != nil {
		fmt.Println(err)
	}
	res, err := tree.Multi(1,
		&zk.CreateRequest{Path: "/lock/n-", Acl: all, Flags: zk.FlagEphemeralSequential},
		&zk.DeleteRequest{Path: "/lock/gone", Version: -1},
		&zk.CheckVersionRequest{Path: "/lock", Version: -1})
	fmt.Println(err)
	for _, r := range res {
		fmt.Println(r.Error)
	}
	name, _ := tree.Create(1, "/lock/n-", nil, zk.FlagEphemeralSequential, all)
	fmt.Println(name)
	// Output:
	// zk: node does not exist
	// <nil>
	// zk: node does not exist
	// unknown error: -2
	// /lock/n-0000000000
}

package memzk

import (
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Tree is the data tree of one ZooKeeper server, with the server's
// bookkeeping of sessions' ephemeral nodes and of containers. Its methods
// answer as go-zookeeper's Conn does for the same request to a real
// server. A Tree is not safe for concurrent use: the explorer that drives
// it runs one event at a time.
type Tree struct {
	nodes      map[string]*node
	ephemerals map[int64]map[string]struct{} // by owner session
	containers map[string]struct{}
	closed     map[int64]struct{} // sessions the server ended
	zxid       int64
	journal    []undo // what the multi being applied did, to take back
}

// node is one znode. creates is ZooKeeper's persisted cversion: the count
// of children ever created, the next sequential suffix; the Stat reports
// 2*creates - len(children).
type node struct {
	data                []byte
	acl                 []zk.ACL
	version, aversion   int32
	creates             int32
	czxid, mzxid, pzxid int64
	owner               int64 // the ephemeral owner's session, 0 if none
	container           bool
	children            map[string]struct{}
}

// New returns a tree that holds "/" only, which anyone may do anything to.
func New() *Tree {
	t := &Tree{
		nodes:      map[string]*node{},
		ephemerals: map[int64]map[string]struct{}{},
		containers: map[string]struct{}{},
		closed:     map[int64]struct{}{},
	}
	t.nodes["/"] = &node{acl: zk.WorldACL(zk.PermAll), children: map[string]struct{}{}}
	return t
}

// stat is the node's Stat as the server reports it: a container's
// ephemeral owner (a marker inside the server) reads as 0.
func (n *node) stat() *zk.Stat {
	kids := int32(len(n.children))
	return &zk.Stat{
		Czxid:          n.czxid,
		Mzxid:          n.mzxid,
		Pzxid:          n.pzxid,
		Version:        n.version,
		Cversion:       2*n.creates - kids,
		Aversion:       n.aversion,
		EphemeralOwner: n.owner,
		DataLength:     int32(len(n.data)),
		NumChildren:    kids,
	}
}

// split returns path's parent ("/" for a child of the root) and its last
// name; ok is false when path has no '/' at all. The server takes the
// parent as everything before the last '/': the parent of "/a/" is "/a".
func split(path string) (parent, name string, ok bool) {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return "", "", false
	}
	parent = path[:i]
	if parent == "" {
		parent = "/"
	}
	return parent, path[i+1:], true
}

// Get returns the node's data and Stat: zk.ErrNoNode when it is missing,
// zk.ErrNoAuth when its ACL does not grant READ, zk.ErrInvalidPath (from
// the client, as go-zookeeper checks paths before sending) for a malformed
// path. Like Conn.Get, the Stat is zero, not nil, on a server's refusal.
func (t *Tree) Get(path string) ([]byte, *zk.Stat, error) {
	n, st, err := t.read(path)
	if err != nil {
		return nil, st, err
	}
	return clone(n.data), st, nil
}

// read is Get's and Children's lookup: the node and its Stat, or the
// error and the Stat Conn returns with it (nil for a malformed path,
// zero on a server's refusal).
func (t *Tree) read(path string) (*node, *zk.Stat, error) {
	if !clientPath(path, false) {
		return nil, nil, zk.ErrInvalidPath
	}
	n := t.nodes[path]
	if n == nil {
		return nil, &zk.Stat{}, zk.ErrNoNode
	}
	if !allows(n.acl, zk.PermRead) {
		return nil, &zk.Stat{}, zk.ErrNoAuth
	}
	return n, n.stat(), nil
}

// Exists reports whether the node is there and its Stat (zero, not nil,
// when it is missing, as Conn.Exists returns it; nil for a malformed path,
// which Conn.Exists refuses with zk.ErrInvalidPath). The server checks no
// ACL for it.
func (t *Tree) Exists(path string) (bool, *zk.Stat) {
	if !clientPath(path, false) {
		return false, nil
	}
	n := t.nodes[path]
	if n == nil {
		return false, &zk.Stat{}
	}
	return true, n.stat()
}

// Children returns the names of the node's children, sorted (the server
// gives them in no order), and its Stat; errors as Get's.
func (t *Tree) Children(path string) ([]string, *zk.Stat, error) {
	n, st, err := t.read(path)
	if err != nil {
		return nil, st, err
	}
	return sortedKeys(n.children), st, nil
}

// Ephemerals returns the paths of the ephemeral nodes session sid owns,
// sorted (the server's getEphemerals, which go-zookeeper does not offer;
// the explorer checks its properties with it).
func (t *Tree) Ephemerals(sid int64) []string {
	return sortedKeys(t.ephemerals[sid])
}

// Zxid is the id of the last write request the tree answered (0 before
// the first): a multi is one, a refused write is one too, as on the
// server, whose failed transactions are logged with theirs.
func (t *Tree) Zxid() int64 { return t.zxid }

func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// index records n, at path, in the server's lists of its session's
// ephemeral nodes and of containers; unindex takes it out.
func (t *Tree) index(path string, n *node) {
	switch {
	case n.container:
		t.containers[path] = struct{}{}
	case n.owner != 0:
		m := t.ephemerals[n.owner]
		if m == nil {
			m = map[string]struct{}{}
			t.ephemerals[n.owner] = m
		}
		m[path] = struct{}{}
	}
}

func (t *Tree) unindex(path string, n *node) {
	switch {
	case n.container:
		delete(t.containers, path)
	case n.owner != 0:
		m := t.ephemerals[n.owner]
		delete(m, path)
		if len(m) == 0 {
			delete(t.ephemerals, n.owner)
		}
	}
}

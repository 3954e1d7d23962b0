// Package memzk is a provisional in-memory ZooKeeper data tree (to be
// replaced by the conformance-tested one).
package memzk

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/go-zookeeper/zk"
)

type node struct {
	data     []byte
	version  int32
	cversion int32
	owner    int64
	acl      []zk.ACL
	kids     map[string]bool
}

// Tree is a data tree.
type Tree struct{ nodes map[string]*node }

// New returns a tree holding "/".
func New() *Tree {
	return &Tree{nodes: map[string]*node{"/": {kids: map[string]bool{}, acl: zk.WorldACL(zk.PermAll)}}}
}

func (t *Tree) clone() *Tree {
	c := &Tree{nodes: make(map[string]*node, len(t.nodes))}
	for p, n := range t.nodes {
		m := *n
		m.kids = make(map[string]bool, len(n.kids))
		for k := range n.kids {
			m.kids[k] = true
		}
		c.nodes[p] = &m
	}
	return c
}

func perm(n *node, p int32) bool {
	for _, a := range n.acl {
		if a.Scheme == "world" && a.Perms&p != 0 {
			return true
		}
	}
	return false
}

// Create creates path.
func (t *Tree) Create(sid int64, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	parent := t.nodes[path.Dir(p)]
	if parent == nil {
		return "", zk.ErrNoNode
	}
	if parent.owner != 0 {
		return "", zk.ErrNoChildrenForEphemerals
	}
	if !perm(parent, zk.PermCreate) {
		return "", zk.ErrNoAuth
	}
	if flags&zk.FlagSequence != 0 {
		p += fmt.Sprintf("%010d", parent.cversion)
	}
	if t.nodes[p] != nil {
		return "", zk.ErrNodeExists
	}
	n := &node{data: data, acl: acl, kids: map[string]bool{}}
	if flags&zk.FlagEphemeral != 0 {
		n.owner = sid
	}
	t.nodes[p] = n
	parent.kids[path.Base(p)] = true
	parent.cversion++
	return p, nil
}

// Delete deletes p.
func (t *Tree) Delete(sid int64, p string, version int32) error {
	n := t.nodes[p]
	if n == nil {
		return zk.ErrNoNode
	}
	parent := t.nodes[path.Dir(p)]
	if !perm(parent, zk.PermDelete) {
		return zk.ErrNoAuth
	}
	if version != -1 && version != n.version {
		return zk.ErrBadVersion
	}
	if len(n.kids) > 0 {
		return zk.ErrNotEmpty
	}
	delete(t.nodes, p)
	delete(parent.kids, path.Base(p))
	parent.cversion++
	return nil
}

// Set sets p's data.
func (t *Tree) Set(sid int64, p string, data []byte, version int32) (*zk.Stat, error) {
	n := t.nodes[p]
	if n == nil {
		return nil, zk.ErrNoNode
	}
	if version != -1 && version != n.version {
		return nil, zk.ErrBadVersion
	}
	n.data, n.version = data, n.version+1
	return t.stat(n), nil
}

func (t *Tree) stat(n *node) *zk.Stat {
	return &zk.Stat{Version: n.version, Cversion: n.cversion, EphemeralOwner: n.owner, NumChildren: int32(len(n.kids)), DataLength: int32(len(n.data))}
}

// Multi applies ops as one transaction.
func (t *Tree) Multi(sid int64, ops ...any) ([]zk.MultiResponse, error) {
	c := t.clone()
	res := make([]zk.MultiResponse, len(ops))
	for i, op := range ops {
		var err error
		switch o := op.(type) {
		case *zk.CreateRequest:
			res[i].String, err = c.Create(sid, o.Path, o.Data, o.Flags, o.Acl)
		case *zk.DeleteRequest:
			err = c.Delete(sid, o.Path, o.Version)
		case *zk.SetDataRequest:
			res[i].Stat, err = c.Set(sid, o.Path, o.Data, o.Version)
		case *zk.CheckVersionRequest:
			n := c.nodes[o.Path]
			switch {
			case n == nil:
				err = zk.ErrNoNode
			case o.Version != -1 && o.Version != n.version:
				err = zk.ErrBadVersion
			}
		}
		if err != nil {
			out := make([]zk.MultiResponse, len(ops))
			out[i].Error = err
			for j := i + 1; j < len(ops); j++ {
				out[j].Error = fmt.Errorf("unknown error: %v", -2)
			}
			return out, err
		}
	}
	t.nodes = c.nodes
	return res, nil
}

// Exists reports whether p exists.
func (t *Tree) Exists(p string) (bool, *zk.Stat) {
	n := t.nodes[p]
	if n == nil {
		return false, nil
	}
	return true, t.stat(n)
}

// Children lists p's children, sorted.
func (t *Tree) Children(p string) ([]string, *zk.Stat, error) {
	n := t.nodes[p]
	if n == nil {
		return nil, nil, zk.ErrNoNode
	}
	var kids []string
	for k := range n.kids {
		kids = append(kids, k)
	}
	sort.Strings(kids)
	return kids, t.stat(n), nil
}

// SetACL sets p's ACL.
func (t *Tree) SetACL(p string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	n := t.nodes[p]
	if n == nil {
		return nil, zk.ErrNoNode
	}
	n.acl = acl
	return t.stat(n), nil
}

// CloseSession deletes sid's ephemeral nodes.
func (t *Tree) CloseSession(sid int64) {
	var gone []string
	for p, n := range t.nodes {
		if n.owner == sid && sid != 0 {
			gone = append(gone, p)
		}
	}
	sort.Strings(gone)
	for _, p := range gone {
		delete(t.nodes, p)
		if parent := t.nodes[path.Dir(p)]; parent != nil {
			delete(parent.kids, path.Base(p))
			parent.cversion++
		}
	}
	_ = strings.TrimSpace
}

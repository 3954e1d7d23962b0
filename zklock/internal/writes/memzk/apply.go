package memzk

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// The server's steps of one write, each checking what the server checks,
// in its order, before it changes anything: a refused step leaves the
// tree as it was. A step that changes the tree notes in the journal how to
// take the change back, for the multi it may be part of. The request
// around a step (a single request or a multi) has already taken its zxid.

// mode is what a create's flags ask for.
type mode struct{ ephemeral, sequential, container bool }

// modes are the flags a create may carry, by value (zk.FlagPersistent to
// zk.FlagContainer); 5 and 6 (TTL) are handled apart.
var modes = [...]mode{{}, {ephemeral: true}, {sequential: true}, {ephemeral: true, sequential: true}, {container: true}}

// undo is one journal entry: a node created, a node deleted (with the
// parent's pzxid before), or a node's data set (with what it replaced).
type undo struct {
	kind    undoKind
	path    string
	n       *node
	parent  *node
	pzxid   int64
	data    []byte
	version int32
	mzxid   int64
}

type undoKind uint8

const (
	undoCreate undoKind = iota
	undoDelete
	undoSet
)

func (t *Tree) create(sid int64, path string, data []byte, acl []zk.ACL, m mode) (string, error) {
	parentPath, _, ok := split(path)
	if !ok || strings.IndexByte(path, 0) >= 0 {
		return "", zk.ErrBadArguments
	}
	acl, err := fixACL(acl)
	if err != nil {
		return "", err
	}
	parent := t.nodes[parentPath]
	if parent == nil {
		return "", zk.ErrNoNode
	}
	if !allows(parent.acl, zk.PermCreate) {
		return "", zk.ErrNoAuth
	}
	if m.sequential {
		path += fmt.Sprintf("%010d", parent.creates)
	}
	if !serverPath(path) {
		return "", zk.ErrBadArguments
	}
	if t.nodes[path] != nil {
		return "", zk.ErrNodeExists
	}
	if parent.owner != 0 {
		return "", zk.ErrNoChildrenForEphemerals
	}
	n := &node{data: clone(data), acl: acl, czxid: t.zxid, mzxid: t.zxid, pzxid: t.zxid, container: m.container}
	if m.ephemeral {
		n.owner = sid
	}
	t.journal = append(t.journal, undo{kind: undoCreate, path: path, n: n, parent: parent, pzxid: parent.pzxid})
	_, name, _ := split(path)
	t.link(path, name, n, parent)
	parent.creates++
	return path, nil
}

// special paths cannot be deleted: the root and ZooKeeper's own nodes
// (which this tree does not hold, so the answer is the server's anyway).
func special(path string) bool {
	switch path {
	case "/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config":
		return true
	}
	return false
}

func (t *Tree) delete(path string, version int32) error {
	parentPath, name, ok := split(path)
	if !ok || strings.IndexByte(path, 0) >= 0 || special(path) {
		return zk.ErrBadArguments
	}
	parent := t.nodes[parentPath]
	if parent == nil {
		return zk.ErrNoNode
	}
	if !allows(parent.acl, zk.PermDelete) {
		return zk.ErrNoAuth
	}
	n := t.nodes[path]
	if n == nil {
		return zk.ErrNoNode
	}
	if version != -1 && version != n.version {
		return zk.ErrBadVersion
	}
	if len(n.children) > 0 {
		return zk.ErrNotEmpty
	}
	t.journal = append(t.journal, undo{kind: undoDelete, path: path, n: n, parent: parent, pzxid: parent.pzxid})
	t.unlink(path, name, n, parent)
	return nil
}

func (t *Tree) set(path string, data []byte, version int32) (*zk.Stat, error) {
	n, err := t.versioned(path, zk.PermWrite, version)
	if err != nil {
		return nil, err
	}
	t.journal = append(t.journal, undo{kind: undoSet, n: n, data: n.data, version: n.version, mzxid: n.mzxid})
	n.data = clone(data)
	n.version++
	n.mzxid = t.zxid
	return n.stat(), nil
}

func (t *Tree) check(path string, version int32) error {
	_, err := t.versioned(path, zk.PermRead, version)
	return err
}

// versioned finds the node at path for a set (perm WRITE) or a check
// (READ) that expects version (-1: any).
func (t *Tree) versioned(path string, perm int32, version int32) (*node, error) {
	if !serverPath(path) {
		return nil, zk.ErrBadArguments
	}
	n := t.nodes[path]
	if n == nil {
		return nil, zk.ErrNoNode
	}
	if !allows(n.acl, perm) {
		return nil, zk.ErrNoAuth
	}
	if version != -1 && version != n.version {
		return nil, zk.ErrBadVersion
	}
	return n, nil
}

// link puts n at path, a child name of parent, as the transaction being
// applied made it.
func (t *Tree) link(path, name string, n, parent *node) {
	if parent.children == nil {
		parent.children = map[string]struct{}{}
	}
	parent.children[name] = struct{}{}
	parent.pzxid = t.zxid
	t.nodes[path] = n
	t.index(path, n)
}

// unlink takes n away from path as the transaction being applied did.
func (t *Tree) unlink(path, name string, n, parent *node) {
	delete(parent.children, name)
	parent.pzxid = t.zxid
	delete(t.nodes, path)
	t.unindex(path, n)
}

// rollback takes back, newest first, what the journal says the multi
// being applied did.
func (t *Tree) rollback() {
	for i := len(t.journal) - 1; i >= 0; i-- {
		u := &t.journal[i]
		switch u.kind {
		case undoCreate:
			_, name, _ := split(u.path)
			t.unlink(u.path, name, u.n, u.parent)
			u.parent.creates--
			u.parent.pzxid = u.pzxid
		case undoDelete:
			_, name, _ := split(u.path)
			t.link(u.path, name, u.n, u.parent)
			u.parent.pzxid = u.pzxid
		case undoSet:
			u.n.data, u.n.version, u.n.mzxid = u.data, u.version, u.mzxid
		}
	}
	t.journal = t.journal[:0]
}

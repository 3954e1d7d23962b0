package memzk

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// go-zookeeper maps the server's error codes it knows to its sentinels and
// the others to a fresh fmt.Errorf("unknown error: %v", code), which no
// errors.Is can match. The double answers those with errors of the same
// message, which nothing matches either.
var (
	// errRuntimeInconsistency answers a multi's ops after the one that
	// failed it (RUNTIMEINCONSISTENCY, -2).
	errRuntimeInconsistency = errors.New("unknown error: -2")
	// errMarshalling answers a multi the server could not take apart
	// (MARSHALLINGERROR, -5): one that reaches a create with a TTL flag.
	errMarshalling = errors.New("unknown error: -5")
)

// begin opens a write request of session sid: zk.ErrSessionExpired when
// the server has ended the session (the request fails whole), else the
// request takes the next zxid.
func (t *Tree) begin(sid int64) error {
	if _, ok := t.closed[sid]; ok {
		return zk.ErrSessionExpired
	}
	t.zxid++
	return nil
}

// end closes a request: what it did stays.
func (t *Tree) end() {
	clear(t.journal)
	t.journal = t.journal[:0]
}

// Create creates a node as Conn.Create does, for session sid (the owner of
// an ephemeral node), and returns its path (with the sequence number of a
// sequential one). flags are zk.FlagPersistent to zk.FlagContainer. Like
// Conn.Create, it refuses unknown flags, a malformed path
// (zk.ErrInvalidPath) and the TTL flags (zk.ErrInvalidFlags) before
// anything is sent; the server's refusals are its errors.
func (t *Tree) Create(sid int64, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if flags < 0 || flags > zk.FlagPersistentSequentialWithTTL {
		return "", fmt.Errorf("invalid flag value: [%v]", flags)
	}
	if !clientPath(path, flags&zk.FlagSequence != 0) {
		return "", zk.ErrInvalidPath
	}
	if flags > zk.FlagContainer {
		return "", fmt.Errorf("Create with TTL flag disallowed: %w", zk.ErrInvalidFlags)
	}
	if err := t.begin(sid); err != nil {
		return "", err
	}
	defer t.end()
	return t.create(sid, path, data, acl, modes[flags])
}

// CreateContainer creates a container node as Conn.CreateContainer does
// with zk.FlagContainer: a node the server deletes once it has had a child
// and has none left (see ReapContainers).
func (t *Tree) CreateContainer(sid int64, path string, data []byte, acl []zk.ACL) (string, error) {
	if !clientPath(path, false) {
		return "", zk.ErrInvalidPath
	}
	if err := t.begin(sid); err != nil {
		return "", err
	}
	defer t.end()
	return t.create(sid, path, data, acl, modes[zk.FlagContainer])
}

// Delete deletes a node as Conn.Delete does; version -1 matches any.
func (t *Tree) Delete(sid int64, path string, version int32) error {
	if !clientPath(path, false) {
		return zk.ErrInvalidPath
	}
	if err := t.begin(sid); err != nil {
		return err
	}
	defer t.end()
	return t.delete(path, version)
}

// Set sets a node's data as Conn.Set does and returns its new Stat; on a
// server's refusal the Stat is zero, not nil, as Conn.Set returns it.
func (t *Tree) Set(sid int64, path string, data []byte, version int32) (*zk.Stat, error) {
	if !clientPath(path, false) {
		return nil, zk.ErrInvalidPath
	}
	if err := t.begin(sid); err != nil {
		return &zk.Stat{}, err
	}
	defer t.end()
	s, err := t.set(path, data, version)
	if err != nil {
		return &zk.Stat{}, err
	}
	return s, nil
}

// SetACL replaces a node's ACL as Conn.SetACL does (ADMIN on the node;
// version matches its Aversion, -1 any) and returns its new Stat (zero on
// a refusal).
func (t *Tree) SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	if !clientPath(path, false) {
		return nil, zk.ErrInvalidPath
	}
	t.zxid++
	if !serverPath(path) {
		return &zk.Stat{}, zk.ErrBadArguments
	}
	acl, err := fixACL(acl)
	if err != nil {
		return &zk.Stat{}, err
	}
	n := t.nodes[path]
	switch {
	case n == nil:
		return &zk.Stat{}, zk.ErrNoNode
	case !allows(n.acl, zk.PermAdmin):
		return &zk.Stat{}, zk.ErrNoAuth
	case version != -1 && version != n.aversion:
		return &zk.Stat{}, zk.ErrBadVersion
	}
	n.acl = acl
	n.aversion++
	return n.stat(), nil
}

// CloseSession is the server ending session sid, on the client's close or
// on expiry: its ephemeral nodes are deleted (in one transaction), and its
// requests from then on fail whole with zk.ErrSessionExpired.
func (t *Tree) CloseSession(sid int64) {
	if _, ok := t.closed[sid]; ok {
		return
	}
	t.closed[sid] = struct{}{}
	t.zxid++
	for _, path := range t.Ephemerals(sid) {
		t.remove(path)
	}
}

// ReapContainers is one pass of the server's container manager: every
// container that has no child and has ever had one is deleted, each in a
// transaction of its own. A container emptied by the pass (its last child
// a container the pass deleted) waits for the next pass, as on the server,
// which lists the pass's candidates first. A container that never had a
// child stays (the server's default znode.container.maxNeverUsedIntervalMs
// of 0).
func (t *Tree) ReapContainers() {
	var reap []string
	for _, path := range sortedKeys(t.containers) {
		if n := t.nodes[path]; len(n.children) == 0 && n.creates > 0 {
			reap = append(reap, path)
		}
	}
	for _, path := range reap {
		t.zxid++
		t.remove(path)
	}
}

// remove deletes the childless node at path for the server's own
// transactions, which check nothing else.
func (t *Tree) remove(path string) {
	parentPath, name, _ := split(path)
	t.unlink(path, name, t.nodes[path], t.nodes[parentPath])
}

package memzk_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// A step is one request of one session, given to the real server and to
// the double alike: a multi of its ops, or (multi false) its one op as a
// single request. Paths are relative to the test's root. Each side answers
// a step with a string (render below) in which paths are relative again,
// sessions are named by their slot and generation (A0, A1 after A0's
// session ended, B0, ...) and errors by their sentinel: comparing the two
// strings compares error values (errors.Is), created names and the Stat
// fields but the zxids and times.
type step struct {
	sess  int // session slot: 0, 1, 2 (A, B, C)
	multi bool
	ops   []op
}

type op struct {
	kind    kind
	path    string
	data    []byte
	flags   int32
	acl     int // index in acls
	version int32
}

type kind uint8

const (
	kCreate    kind = iota
	kContainer      // single: Conn.CreateContainer
	kDelete
	kSet
	kCheck  // multi only
	kSetACL // single only
	kGet
	kExists
	kChildren
	kClose // the session ends (Conn.Close; Tree.CloseSession) and its slot gets a new one
	kValue // multi only: a request given as a value, which Conn.Multi refuses
	kNil   // multi only: a nil *zk.CheckVersionRequest
)

var kindNames = [...]string{"create", "container", "delete", "set", "check", "setacl", "get", "exists", "children", "close", "value", "nil"}

// acls are the ACLs steps choose from: everything, read only, read and
// create (no delete below, no write), everything but read, a digest
// identity the sessions do not hold, and none at all (refused).
var acls = [][]zk.ACL{
	zk.WorldACL(zk.PermAll),
	zk.WorldACL(zk.PermRead),
	zk.WorldACL(zk.PermRead | zk.PermCreate),
	zk.WorldACL(zk.PermAll &^ zk.PermRead),
	zk.DigestACL(zk.PermAll, "fleet", "s3cret"),
	nil,
}

// The indexes in acls.
const (
	aclAll = iota
	aclRead
	aclRC
	aclNoRead
	aclDigest
	aclNone
)

var aclNames = [...]string{"all", "read", "rc", "noread", "digest", "none"}

func (s step) String() string {
	var ops []string
	for _, o := range s.ops {
		ops = append(ops, o.String())
	}
	who := string(rune('A' + s.sess))
	if s.multi || len(s.ops) == 0 {
		return fmt.Sprintf("%s multi(%s)", who, strings.Join(ops, "; "))
	}
	return who + " " + ops[0]
}

func (o op) String() string {
	s := kindNames[o.kind] + " " + o.path
	switch o.kind {
	case kCreate:
		s += fmt.Sprintf(" f%d %q %s", o.flags, o.data, aclNames[o.acl])
	case kContainer:
		s += fmt.Sprintf(" %q %s", o.data, aclNames[o.acl])
	case kSet:
		s += fmt.Sprintf(" %q v%d", o.data, o.version)
	case kSetACL:
		s += fmt.Sprintf(" %s v%d", aclNames[o.acl], o.version)
	case kDelete, kCheck:
		s += fmt.Sprintf(" v%d", o.version)
	}
	return s
}

// request is o as an op of Conn.Multi, under root.
func (o op) request(root string) any {
	p := root + o.path
	switch o.kind {
	case kCreate:
		return &zk.CreateRequest{Path: p, Data: o.data, Acl: acls[o.acl], Flags: o.flags}
	case kDelete:
		return &zk.DeleteRequest{Path: p, Version: o.version}
	case kSet:
		return &zk.SetDataRequest{Path: p, Data: o.data, Version: o.version}
	case kCheck:
		return &zk.CheckVersionRequest{Path: p, Version: o.version}
	case kNil:
		return (*zk.CheckVersionRequest)(nil)
	}
	return zk.CheckVersionRequest{Path: p, Version: o.version}
}

// view renders one side's answers: root is stripped from paths, and
// names maps that side's session ids to the sessions' names.
type view struct {
	root  string
	names map[int64]string
}

// errNames names the errors the answers may carry, first match wins.
var errNames = []struct {
	err  error
	name string
}{
	{zk.ErrNoNode, "NoNode"}, {zk.ErrNodeExists, "NodeExists"}, {zk.ErrBadVersion, "BadVersion"},
	{zk.ErrNotEmpty, "NotEmpty"}, {zk.ErrNoChildrenForEphemerals, "NoChildrenForEphemerals"},
	{zk.ErrNoAuth, "NoAuth"}, {zk.ErrInvalidACL, "InvalidACL"}, {zk.ErrBadArguments, "BadArguments"},
	{zk.ErrAPIError, "APIError"}, {zk.ErrInvalidPath, "InvalidPath"}, {zk.ErrInvalidFlags, "InvalidFlags"},
	{zk.ErrSessionExpired, "SessionExpired"}, {zk.ErrUnhandledFieldType, "UnhandledFieldType"},
}

// errName names err: a sentinel's name, or for an error go-zookeeper
// makes up, its message in quotes.
func errName(err error) string {
	if err == nil {
		return "ok"
	}
	for _, e := range errNames {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	return fmt.Sprintf("%q", err.Error())
}

func (v view) path(p string) string {
	if rel, ok := strings.CutPrefix(p, v.root); ok && v.root != "" {
		return rel
	}
	return "!" + p
}

func (v view) stat(s *zk.Stat) string {
	if s == nil {
		return "nil"
	}
	eo := "-"
	if s.EphemeralOwner != 0 {
		eo = v.names[s.EphemeralOwner]
		if eo == "" {
			eo = fmt.Sprintf("?%x", s.EphemeralOwner)
		}
	}
	return fmt.Sprintf("{v%d cv%d av%d n%d len%d eo%s}", s.Version, s.Cversion, s.Aversion, s.NumChildren, s.DataLength, eo)
}

func (v view) multi(res []zk.MultiResponse, err error) string {
	if res == nil {
		return errName(err) + " nil"
	}
	out := make([]string, len(res))
	for i, r := range res {
		switch {
		case r.Error != nil:
			out[i] = errName(r.Error)
		case r.String != "":
			out[i] = v.path(r.String)
		case r.Stat != nil:
			out[i] = v.stat(r.Stat)
		default:
			out[i] = "ok"
		}
	}
	return fmt.Sprintf("%s [%s]", errName(err), strings.Join(out, " "))
}

func (v view) created(p string, err error) string {
	if p == "" {
		return errName(err)
	}
	return errName(err) + " " + v.path(p)
}

func (v view) got(data []byte, s *zk.Stat, err error) string {
	d := "nil"
	if data != nil {
		d = fmt.Sprintf("%q", data)
	}
	return fmt.Sprintf("%s %s %s", errName(err), d, v.stat(s))
}

func (v view) children(names []string, s *zk.Stat, err error) string {
	names = slices.Clone(names)
	slices.Sort(names)
	return fmt.Sprintf("%s %v %s", errName(err), names, v.stat(s))
}

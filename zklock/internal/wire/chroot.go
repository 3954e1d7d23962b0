package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A chroot confines a session to a subtree, as the Java client, Curator's
// connectString and kazoo do with "host:port/myapp": every path the client
// names is under /myapp on the server, and every path the server returns
// has /myapp taken off. go-zookeeper v1.0.4 has no chroot, so it is done
// here, on the frames, where every request of the session passes (the
// lock recipes' and those made through Session.Conn alike): the Java
// client's rule, prependChroot and the strip in its reply and event
// handling, applied to the bytes. A request's paths get the prefix ("/"
// becomes the chroot itself); the paths a reply or an event carries lose
// it (the chroot itself becomes "/").
//
// The requests go-zookeeper v1.0.4 can send (conn.go, structs.go): ops
// whose first field is a path, a multi of create, delete, setData and
// check, setWatches with its three path lists, and four without a path
// (ping, close, setAuth, reconfig). Anything else is refused rather than
// sent outside the chroot. The replies that carry paths: create's (and
// create2's, a container's, a TTL node's), sync's, a multi's create
// results, and watch events.

// errChrootFrame reports a request the chroot cannot rewrite: sending it
// unchanged would name a path outside the chroot.
var errChrootFrame = errors.New("wire: chroot: cannot rewrite request")

type chroot struct{ prefix []byte }

// request returns the request frame f rewritten for the chroot, in dst's
// storage: f itself is left as it is.
func (r chroot) request(dst, f []byte) ([]byte, error) {
	op := opcode(f)
	var room [8]int
	offs, err := requestPaths(room[:0], f, op)
	if err != nil {
		return nil, fmt.Errorf("%w with opcode %d: %w", errChrootFrame, op, err)
	}
	dst = dst[:0]
	from := 0
	for _, p := range offs {
		n := max(int(int32(binary.BigEndian.Uint32(f[p:]))), 0)
		dst = append(dst, f[from:p]...)
		path := below(f[p+4 : p+4+n])
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.prefix)+len(path)))
		dst = append(dst, r.prefix...)
		dst = append(dst, path...)
		from = p + 4 + n
	}
	dst = append(dst, f[from:]...)
	binary.BigEndian.PutUint32(dst, uint32(len(dst)-4))
	return dst, nil
}

// below returns what follows the chroot in path as the server reads it:
// path, but nothing of "/", which is the chroot itself.
func below[P string | []byte](path P) P {
	if string(path) == "/" {
		return path[:0]
	}
	return path
}

// requestPaths appends to offs the offsets in f of the paths the request
// names.
func requestPaths(offs []int, f []byte, op int32) ([]int, error) {
	if len(f) < 12 {
		return nil, errShort
	}
	switch op {
	case opPing, opClose, opSetAuth, opReconfig:
		return offs, nil
	case OpMulti, OpMultiRead:
		return multiPaths(offs, f)
	case OpSetWatches:
		return watchPaths(offs, f)
	case OpCreate, OpDelete, opExists, OpGetData, OpSetData, opGetACL, opSetACL,
		opGetChildren, OpSync, OpGetChildren2, opCheck, opCreate2, opContainer, opCreateTTL:
		if _, err := skipString(f, 12); err != nil {
			return nil, err
		}
		return append(offs, 12), nil
	}
	return nil, errors.New("unknown opcode")
}

// multiPaths appends the path of each op of a multi: after each op's
// header (type, done, error), its path, then the op's other fields.
func multiPaths(offs []int, f []byte) ([]int, error) {
	off := 12
	for {
		if len(f) < off+9 {
			return nil, errShort
		}
		typ, done := int32(binary.BigEndian.Uint32(f[off:])), f[off+4] != 0
		off += 9
		if done {
			return offs, nil
		}
		offs = append(offs, off)
		end, err := skipOp(f, off, typ)
		if err != nil {
			return nil, err
		}
		off = end
	}
}

// skipOp returns the end of a multi's op of type typ starting at off.
func skipOp(f []byte, off int, typ int32) (int, error) {
	off, err := skipString(f, off) // the path
	if err != nil {
		return 0, err
	}
	var tail int // fixed-size fields after the variable ones
	switch typ {
	case OpCreate, opCreate2, opContainer, opCreateTTL: // data, acl, flags (, ttl)
		if off, err = skipString(f, off); err == nil {
			off, err = skipACL(f, off)
		}
		tail = 4
		if typ == opCreateTTL {
			tail += 8
		}
	case OpDelete, opCheck: // version
		tail = 4
	case OpSetData: // data, version
		off, err = skipString(f, off)
		tail = 4
	case opGetChildren, OpGetData: // a multiRead's: watch
		tail = 1
	default:
		return 0, fmt.Errorf("multi op of type %d", typ)
	}
	if err != nil {
		return 0, err
	}
	if len(f) < off+tail {
		return 0, errShort
	}
	return off + tail, nil
}

// skipACL returns the end of the ACL vector at off: per entry, the
// permissions, the scheme and the id.
func skipACL(f []byte, off int) (int, error) {
	n, off, err := count(f, off)
	for i := 0; i < n && err == nil; i++ {
		if len(f) < off+4 {
			return 0, errShort
		}
		if off, err = skipString(f, off+4); err == nil {
			off, err = skipString(f, off)
		}
	}
	return off, err
}

// watchPaths appends the paths of a setWatches request: after the zxid,
// three vectors of paths (data, exist and child watches).
func watchPaths(offs []int, f []byte) ([]int, error) {
	off := 12 + 8
	for range 3 {
		n, o, err := count(f, off)
		if err != nil {
			return nil, err
		}
		off = o
		for range n {
			offs = append(offs, off)
			if off, err = skipString(f, off); err != nil {
				return nil, err
			}
		}
	}
	return offs, nil
}

// stripsReply reports whether the reply to a request of opcode op may
// carry paths (see response).
func stripsReply(op int32) bool {
	switch op {
	case OpCreate, opCreate2, opContainer, opCreateTTL, OpSync, OpMulti:
		return true
	}
	return false
}

// response takes the chroot off the paths of the reply f to a request of
// opcode op (a watch event: opNotify), in place, and returns f shortened.
// A reply that is an error carries no path, and one the chroot cannot
// read is left as it is (go-zookeeper fails it on its own).
func (r chroot) response(f []byte, op int32) []byte {
	const body = 4 + 16 // length; xid, zxid, error
	if len(f) < body {
		return f
	}
	if op != opNotify && binary.BigEndian.Uint32(f[16:20]) != 0 {
		return f
	}
	switch op {
	case opNotify: // type, state, path
		f, _ = r.strip(f, body+8)
	case OpMulti:
		f = r.stripMulti(f, body)
	default: // the path first (a create2's stat after it stays)
		f, _ = r.strip(f, body)
	}
	binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	return f
}

// stripMulti takes the chroot off the paths of a multi's results, which
// start at off: per result, a header (type, done, error) and its fields.
func (r chroot) stripMulti(f []byte, off int) []byte {
	for len(f) >= off+9 && f[off+4] == 0 {
		typ := int32(binary.BigEndian.Uint32(f[off:]))
		off += 9
		switch typ {
		case OpCreate, opCreate2, opContainer, opCreateTTL:
			if f, off = r.strip(f, off); off > 0 && typ != OpCreate {
				off += statLen // a create2's stat
			}
		case OpSetData:
			off += statLen
		case opNotify: // an error result
			off += 4
		case OpDelete, opCheck:
		default:
			return f // unknown: go-zookeeper fails the reply itself
		}
		if off == 0 || off > len(f) { // not a whole result
			return f
		}
	}
	return f
}

// strip takes the chroot off the path at off in f, in place, and returns
// f shortened and the path's end (0 when f has no whole string there). A
// path outside the chroot, which a server does not send, is left whole.
func (r chroot) strip(f []byte, off int) ([]byte, int) {
	end, err := skipString(f, off)
	if err != nil {
		return f, 0
	}
	path := f[off+4 : end]
	k := len(r.prefix) // bytes to take off
	switch {
	case string(path) == string(r.prefix):
		k-- // the chroot itself is "/": keep one byte, made a slash below
	case len(path) > k && path[k] == '/' && string(path[:k]) == string(r.prefix):
	default:
		return f, end
	}
	binary.BigEndian.PutUint32(f[off:], uint32(len(path)-k))
	copy(f[off+4:], f[off+4+k:])
	f = f[:len(f)-k]
	f[off+4] = '/'
	return f, end - k
}

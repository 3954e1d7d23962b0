package writes

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// A request's size is what go-zookeeper encodes it to (jute, structs.go):
// a string or a byte slice is a 4-byte length and its bytes, an int32 4
// bytes, a list a 4-byte count and its items, an ACL entry its perms,
// scheme and id. A request is an 8-byte header (xid, opcode) and its body;
// a multi's body is each op behind a 9-byte header (type, done, error) and
// a closing header. The bounds are on that (Config.MaxBytes): go-zookeeper
// fails a request that does not fit its buffer (zk.ErrShortBuffer) and the
// server drops the connection of one over its jute.maxbuffer, both
// counting the header and the body. TestSizeIsWhatGoZookeeperWrites holds
// this to go-zookeeper's own bytes.

const (
	headerSize   = 8 // a request's xid and opcode
	opHeaderSize = 9 // a multi's header of each op, and its closing one
)

// ErrTooLarge ends a write that alone is larger than a request may be
// (Verdict TooLarge).
var ErrTooLarge = errors.New("zklock: request too large")

// opSize is what op adds to a multi: its header and its body.
func opSize(op any) int { return opHeaderSize + bodySize(op) }

// bodySize is what op encodes to, as a request's body.
func bodySize(op any) int {
	switch o := op.(type) {
	case *zk.CreateRequest:
		return str(o.Path) + buf(o.Data) + acls(o.Acl) + 4
	case *zk.SetDataRequest:
		return str(o.Path) + buf(o.Data) + 4
	case *zk.DeleteRequest:
		return str(o.Path) + 4
	case *zk.CheckVersionRequest:
		return str(o.Path) + 4
	}
	return 0 // not an op go-zookeeper's Multi takes: it fails unsent
}

func str(s string) int    { return 4 + len(s) }
func buf(b []byte) int    { return 4 + len(b) } // nil: a length of -1, no bytes
func acls(a []zk.ACL) int { return 4 + len(a)*4 + sumACL(a) }

func sumACL(a []zk.ACL) int {
	n := 0
	for _, e := range a {
		n += str(e.Scheme) + str(e.ID)
	}
	return n
}

// multiSize is the size of a multi of writes whose ops add size.
func multiSize(size int) int { return headerSize + size + opHeaderSize }

// aloneSize is the size of w's request when it goes alone: a lone create
// or delete is sent as that request, a transaction as a multi.
func (w *Write) aloneSize() int {
	if w.kind == Txn {
		return multiSize(w.size)
	}
	return headerSize + bodySize(w.ops[0])
}

// tooLarge reports why w cannot be sent, alone larger than limit; nil
// when it fits.
func (w *Write) tooLarge(limit int) error {
	if n := w.aloneSize(); n > limit {
		return fmt.Errorf("%w: %d bytes encoded (header and body), over the limit of %d (the smaller of go-zookeeper's buffer and the server's jute.maxbuffer)",
			ErrTooLarge, n, limit)
	}
	return nil
}

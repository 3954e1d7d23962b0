package writes

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mutant"
)

// A request's size is what go-zookeeper encodes it to (jute, structs.go):
// a string or a byte slice is a 4-byte length and its bytes (nil: a length
// of -1), an int32 4 bytes, a list a 4-byte count and its items, an ACL
// entry its perms, scheme and id. A request is an 8-byte header (xid,
// opcode) and its body; a multi's body is each op behind a 9-byte header
// (type, done, error) and a closing header. The bounds are on that
// (Config.MaxBytes): go-zookeeper fails a request that does not fit its
// buffer (zk.ErrShortBuffer) and the server drops the connection of one
// over its jute.maxbuffer, both counting the header and the body. The
// server reads each path with the session's chroot before it, which the
// connection adds after go-zookeeper encoded the request: that is counted
// too (sizer).
// zklock.TestLimitIsExact holds this count to go-zookeeper's bytes.

const (
	headerSize   = 8 // a request's xid and opcode
	opHeaderSize = 9 // a multi's header of each op, and its closing one
)

// ErrTooLarge ends a write that alone is larger than a request may be
// (Verdict TooLarge).
var ErrTooLarge = errors.New("zklock: request too large")

// sizer counts what ops encode to, each path as the server reads it
// (Config.PathLen: a chroot's bytes before it, which the connection adds
// after the writer sized the request).
type sizer struct{ pathLen func(string) int }

func (z sizer) path(p string) int {
	if z.pathLen == nil || mutant.On(mutSizeWithoutChroot) {
		return len(p)
	}
	return z.pathLen(p)
}

// op is what op adds to a multi: its header and its body.
func (z sizer) op(op any) int { return opHeaderSize + z.body(op) }

// body is what op encodes to, as a request's body: its path, data, ACL
// and flags or version.
func (z sizer) body(op any) int {
	switch o := op.(type) {
	case *zk.CreateRequest:
		n := 4 + z.path(o.Path) + 4 + len(o.Data) + 4 + 4
		for _, e := range o.Acl {
			n += 4 + 4 + len(e.Scheme) + 4 + len(e.ID)
		}
		return n
	case *zk.SetDataRequest:
		return 4 + z.path(o.Path) + 4 + len(o.Data) + 4
	case *zk.DeleteRequest:
		return 4 + z.path(o.Path) + 4
	case *zk.CheckVersionRequest:
		return 4 + z.path(o.Path) + 4
	}
	return 0 // not an op go-zookeeper's Multi takes: it fails unsent
}

// tooLarge reports why w cannot be sent, its request alone larger than
// limit (a lone create or delete goes as that request, a transaction as a
// multi); nil when it fits.
func (z sizer) tooLarge(w *Write, limit int) error {
	n := headerSize + z.body(w.ops[0])
	if w.kind == Txn {
		n = headerSize + w.size + opHeaderSize
	}
	if n > limit {
		return fmt.Errorf("%w: %d bytes encoded (header and body), over the limit of %d (the smaller of go-zookeeper's buffer and the server's jute.maxbuffer)",
			ErrTooLarge, n, limit)
	}
	return nil
}

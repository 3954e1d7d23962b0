package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// OpMultiRead is ZooKeeper's multiRead (3.6 and later): read ops, each
// answered in the order sent, in one request. go-zookeeper v1.0.4 cannot
// send it; the tap does (Call).
const OpMultiRead int32 = 22

// A listing read through multiRead is two ops on the lock path: its
// children (getChildren, which has no stat in a multiRead), then its own
// data and stat (getData), read after them. The fencing token is the
// listing's pzxid (zklock's waitTurn), and the order makes it one no lower
// than the listing: a node the children miss was deleted before the stat
// was read, so the stat's pzxid is at least that delete's zxid, as a
// getChildren2's is. A pzxid read before the children could equal the
// token of a holder the children no longer show.

// ListingSize is what one path's listing adds to a multiRead request:
// two ops, each a 9-byte header, the path (its length and bytes) and the
// watch flag. pathLen is the path's length as the server reads it (under
// a chroot, with the chroot's bytes).
func ListingSize(pathLen int) int { return 2 * NodeReadSize(pathLen) }

// NodeReadSize is what one node's read (AppendNodeRead) adds to a
// multiRead request: one op.
func NodeReadSize(pathLen int) int { return 9 + 4 + pathLen + 1 }

// MultiReadBase is the size of a multiRead request with no op: the frame's
// length, xid and opcode, and the closing header.
const MultiReadBase = 12 + 9

// AppendListings appends to dst the fields of a multiRead request that
// lists each path: getChildren then getData, no watch.
func AppendListings(dst []byte, paths []string) []byte {
	for _, p := range paths {
		dst = AppendListing(dst, p)
	}
	return AppendEnd(dst)
}

// AppendListing appends one path's listing to a multiRead's ops.
func AppendListing(dst []byte, p string) []byte {
	dst = appendPath(appendOpHead(dst, opGetChildren), p)
	return AppendNodeRead(dst, p)
}

// AppendNodeRead appends a read of the node at p, its data and stat (a
// getData, no watch: a multiRead sets none), to a multiRead's ops.
func AppendNodeRead(dst []byte, p string) []byte {
	return appendPath(appendOpHead(dst, OpGetData), p)
}

// AppendEnd closes a multiRead's ops: type -1, done, error -1.
func AppendEnd(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, minusOne)
	return binary.BigEndian.AppendUint32(append(dst, 1), minusOne)
}

// appendOpHead appends a multi op's header: its type, done (false) and
// error (-1, as the Java client sends it).
func appendOpHead(dst []byte, typ int32) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(typ))
	return binary.BigEndian.AppendUint32(append(dst, 0), minusOne)
}

// appendPath appends a path and the watch flag (false).
func appendPath(dst []byte, p string) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(p)))
	return append(append(dst, p...), 0)
}

// minusOne is -1 as an int32 on the wire.
const minusOne = ^uint32(0)

// Listing is one path's listing as a multiRead answered it: the children's
// names and the path's stat, or the error of the op that failed
// (zk.ErrNoNode for a path that does not exist); for a node's read, its
// data and stat.
type Listing struct {
	Children []string
	Data     []byte
	Stat     zk.Stat
	Err      error
}

// errBadReply reports a multiRead answer that does not parse.
var errBadReply = errors.New("wire: multiRead: malformed answer")

// ParseListings reads the answer to AppendListings' request of n paths.
func ParseListings(r Reply, n int) ([]Listing, error) {
	return ParseReads(r, make([]bool, n))
}

// ParseReads reads the answer to a multiRead of listings and node reads
// in that order: nodes[i] says that the i-th is a node's read.
func ParseReads(r Reply, nodes []bool) ([]Listing, error) {
	if r.Err != 0 {
		return nil, fmt.Errorf("wire: multiRead: %w", codeErr(r.Err))
	}
	b, out := r.Body, make([]Listing, len(nodes))
	for i, node := range nodes {
		var err error
		if !node {
			if b, err = parseChildren(b, &out[i]); err != nil {
				return nil, err
			}
		}
		if b, err = parseData(b, &out[i], node); err != nil {
			return nil, err
		}
	}
	if len(b) < 9 || int32(binary.BigEndian.Uint32(b)) != -1 || b[4] == 0 {
		return nil, fmt.Errorf("%w: no end after %d reads", errBadReply, len(nodes))
	}
	return out, nil
}

// opHead reads an op's result header: its type and error; an error
// result's own field (the same code) is read too.
func opHead(b []byte) (typ int32, code int32, rest []byte, err error) {
	if len(b) < 9 {
		return 0, 0, nil, errBadReply
	}
	typ, code, b = int32(binary.BigEndian.Uint32(b)), int32(binary.BigEndian.Uint32(b[5:])), b[9:]
	if typ == opNotify { // an error result: its code again
		if len(b) < 4 {
			return 0, 0, nil, errBadReply
		}
		code, b = int32(binary.BigEndian.Uint32(b)), b[4:]
	}
	return typ, code, b, nil
}

// parseChildren reads a getChildren result into l.
func parseChildren(b []byte, l *Listing) ([]byte, error) {
	typ, code, b, err := opHead(b)
	switch {
	case err != nil:
		return nil, err
	case typ == opNotify:
		l.Err = codeErr(code)
		return b, nil
	case typ != opGetChildren:
		return nil, fmt.Errorf("%w: result of type %d for getChildren", errBadReply, typ)
	}
	n, off, err := count(b, 0)
	if err != nil {
		return nil, errBadReply
	}
	l.Children = make([]string, 0, n)
	for range n {
		end, err := skipString(b, off)
		if err != nil {
			return nil, errBadReply
		}
		l.Children = append(l.Children, string(b[off+4:end]))
		off = end
	}
	return b[off:], nil
}

// parseData reads a getData result's stat into l, and its data when
// keep (else skipped).
func parseData(b []byte, l *Listing, keep bool) ([]byte, error) {
	typ, code, b, err := opHead(b)
	switch {
	case err != nil:
		return nil, err
	case typ == opNotify:
		if l.Err == nil {
			l.Err = codeErr(code)
		}
		return b, nil
	case typ != OpGetData:
		return nil, fmt.Errorf("%w: result of type %d for getData", errBadReply, typ)
	}
	off, err := skipString(b, 0)
	if err != nil || len(b) < off+statLen {
		return nil, errBadReply
	}
	if keep && off > 4 {
		l.Data = append([]byte(nil), b[4:off]...)
	}
	s, be := b[off:], binary.BigEndian
	l.Stat = zk.Stat{
		Czxid: int64(be.Uint64(s)), Mzxid: int64(be.Uint64(s[8:])),
		Ctime: int64(be.Uint64(s[16:])), Mtime: int64(be.Uint64(s[24:])),
		Version: int32(be.Uint32(s[32:])), Cversion: int32(be.Uint32(s[36:])),
		Aversion: int32(be.Uint32(s[40:])), EphemeralOwner: int64(be.Uint64(s[44:])),
		DataLength: int32(be.Uint32(s[52:])), NumChildren: int32(be.Uint32(s[56:])),
		Pzxid: int64(be.Uint64(s[60:])),
	}
	return s[statLen:], nil
}

// codeErr is the error of ZooKeeper's code: go-zookeeper's value where a
// caller tells it apart (errors.Is), else one that names the code.
func codeErr(code int32) error {
	switch code {
	case 0:
		return nil
	case -101:
		return zk.ErrNoNode
	case -102:
		return zk.ErrNoAuth
	case -118:
		return zk.ErrSessionMoved
	}
	return fmt.Errorf("wire: ZooKeeper error %d", code)
}

// A watch on a node whose read goes in a multiRead, which sets none, is
// set by a setWatches request written just before it (the session's
// listings and reads: zklock's session lister): the request go-zookeeper
// sends on a new connection to set its watches again, which sets a data
// watch on each path it names unless the node is gone (then the watch
// fires at once: NodeDeleted) or was changed after relativeZxid
// (NodeDataChanged). The server runs it and then the read, in the order
// written, so the read sees the node as it stood with the watch set.

// SetWatchesSize is the size of a setWatches request for data watches on
// paths of pathLens: the frame's head, relativeZxid, and three vectors.
func SetWatchesSize(pathLens int, paths int) int { return 12 + 8 + 3*4 + 4*paths + pathLens }

// AppendSetWatches appends to dst the fields of a setWatches request that
// sets a data watch on each of paths, none fired by a change of the
// node's data at or before relativeZxid.
func AppendSetWatches(dst []byte, relativeZxid int64, paths []string) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(relativeZxid))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(paths)))
	for _, p := range paths {
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(p)))
		dst = append(dst, p...)
	}
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(dst, 0), 0) // no exist or child watches
}

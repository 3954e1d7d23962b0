package wire

import (
	"encoding/binary"
	"errors"
)

// The ZooKeeper protocol as the tap reads and writes its frames: the
// opcodes, a request frame's opcode and first path, the strings and
// vectors its fields are made of, and a reply's error code and fields
// (Reply).

// The ZooKeeper request opcodes the session uses.
const (
	OpCreate       int32 = 1
	OpDelete       int32 = 2
	OpGetData      int32 = 4
	OpSetData      int32 = 5
	OpSync         int32 = 9
	OpGetChildren2 int32 = 12
	OpMulti        int32 = 14
	// OpSetWatches is the request go-zookeeper sends on a new connection
	// to re-arm the watches of the previous one.
	OpSetWatches int32 = 101
)

// The opcodes of the ZooKeeper protocol the chroot knows, beyond those
// the session uses (above).
const (
	opNotify      int32 = -1 // a watch event's xid, and a multi's error result
	opPing        int32 = 11
	opClose       int32 = -11
	opExists      int32 = 3
	opGetACL      int32 = 6
	opSetACL      int32 = 7
	opGetChildren int32 = 8
	opCheck       int32 = 13
	opCreate2     int32 = 15
	opReconfig    int32 = 16
	opContainer   int32 = 19
	opCreateTTL   int32 = 21
	opSetAuth     int32 = 100
)

// statLen is the size of a Stat on the wire: 4 int64s, 3 int32s, an
// int64, 2 int32s and an int64.
const statLen = 68

// Reply is the server's answer to a request of the tap's: the reply
// header's error code, and the fields after the header.
type Reply struct {
	Err  int32
	Body []byte
}

// opcode returns the opcode of the request framed in b (length, xid,
// opcode, then its fields), or -1.
func opcode(b []byte) int32 {
	if len(b) < 12 {
		return -1
	}
	return int32(binary.BigEndian.Uint32(b[8:12]))
}

// firstPath returns the first path the request framed in b names: its own
// (every request of ours begins with its path), or for a multi its first
// op's (after the 9-byte header of type, done flag and error).
func firstPath(b []byte, op int32) []byte {
	off := 12
	if op == OpMulti {
		off += 9
	}
	if len(b) < off+4 {
		return nil
	}
	n := int(int32(binary.BigEndian.Uint32(b[off:])))
	if n < 0 || len(b) < off+4+n {
		return nil
	}
	return b[off+4 : off+4+n]
}

var errShort = errors.New("frame too short")

// count reads a vector's length at off (-1, a null vector, is empty).
func count(f []byte, off int) (n, end int, err error) {
	if len(f) < off+4 {
		return 0, 0, errShort
	}
	n = int(int32(binary.BigEndian.Uint32(f[off:])))
	return max(n, 0), off + 4, nil
}

// skipString returns the end of the string or buffer at off (length -1:
// null).
func skipString(f []byte, off int) (int, error) {
	n, off, err := count(f, off)
	if err != nil || len(f) < off+n {
		return 0, errShort
	}
	return off + n, nil
}

package wire

import (
	"encoding/binary"
	"testing"
)

// frame returns a request frame: length, xid, opcode, then n bytes.
func frame(op int32, n int) []byte {
	b := make([]byte, 12+n)
	binary.BigEndian.PutUint32(b[0:4], uint32(8+n))
	binary.BigEndian.PutUint32(b[8:12], uint32(op))
	return b
}

// TestCountsFramesBatchedAndSplit: zklock's connections write several
// requests per Write, and a frame may end in a later Write; every request
// is counted once, by its opcode, and the connect request not at all.
func TestCountsFramesBatchedAndSplit(t *testing.T) {
	var stream []byte
	stream = append(stream, frame(0, 36)...) // the connect request
	stream = append(stream, frame(1, 40)...) // create
	stream = append(stream, frame(11, 0)...) // ping: the header only
	stream = append(stream, frame(12, 9)...) // getChildren2
	stream = append(stream, frame(14, 70)...)
	stream = append(stream, frame(-11, 0)...) // closeSession
	for _, cut := range [][]int{{len(stream)}, {1, 5, 13, 48, 60, 61, 70, 100}, {12, 24, 48}} {
		cn := &conn{c: New()}
		prev := 0
		for _, at := range append(cut, len(stream)) {
			at = min(at, len(stream))
			cn.count(stream[prev:at])
			prev = at
		}
		got := cn.c.Counts()
		if got.Create != 1 || got.Ping != 1 || got.GetChildren != 1 || got.Multi != 1 || got.Other != 1 {
			t.Errorf("cut at %v: counted %+v, want one create, ping, getChildren, multi and other", cut, got)
		}
		if cn.skip != 0 || len(cn.hdr) != 0 {
			t.Errorf("cut at %v: left inside a frame (skip %d, header %d bytes)", cut, cn.skip, len(cn.hdr))
		}
	}
}

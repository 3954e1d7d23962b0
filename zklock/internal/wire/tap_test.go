package wire

import (
	"encoding/binary"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// frame builds a request frame: length, xid, opcode, then (for a multi, a
// 9-byte header first) the path.
func frame(op int32, path string) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, 7)
	b = binary.BigEndian.AppendUint32(b, uint32(op))
	if op == OpMulti {
		b = append(b, make([]byte, 9)...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
	b = append(b, path...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// A pipelined request's waiter is told when a request of one of its
// opcodes naming its key is written, and only then.
func TestExpectSeesItsRequest(t *testing.T) {
	tap := New(nil, nil)
	w := tap.Expect("/a/_c_x-lock-", OpCreate, OpMulti)
	tap.wrote(frame(OpGetData, "/a/_c_x-lock-")) // another opcode
	tap.wrote(frame(OpCreate, "/a/other"))       // another path
	select {
	case <-w.Sent():
		t.Fatal("sent before its request was written")
	default:
	}
	tap.wrote(frame(OpMulti, "/a/_c_x-lock-"))
	select {
	case <-w.Sent():
	default:
		t.Fatal("not sent after its request was written")
	}
	if tap.Written(OpCreate) != 1 || tap.Written(OpMulti) != 1 || tap.Written(OpGetData) != 1 {
		t.Errorf("written: create %d, multi %d, getData %d", tap.Written(OpCreate), tap.Written(OpMulti), tap.Written(OpGetData))
	}
	tap.Forget("/a/_c_x-lock-", w) // already gone: nothing happens
}

// FirstWriteAfter dates the first write after a mark, and the one before.
func TestFirstWriteAfterMark(t *testing.T) {
	tap := New(nil, nil)
	t0 := time.Now()
	tap.began(t0)
	m := tap.Mark()
	if _, _, ok := tap.FirstWriteAfter(m); ok {
		t.Fatal("a write after the mark before any was made")
	}
	tap.began(t0.Add(time.Millisecond))
	at, prev, ok := tap.FirstWriteAfter(m)
	if !ok || !at.Equal(t0.Add(time.Millisecond)) || !prev.Equal(t0) {
		t.Fatalf("FirstWriteAfter = %v, %v, %v", at, prev, ok)
	}
}

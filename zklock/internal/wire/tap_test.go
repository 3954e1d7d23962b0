package wire

import (
	"encoding/binary"
	"io"
	"net"
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

// writeOn writes b on tap as its connection does: its write begins at
// start, then its bytes go out and the tap tells its waiter.
func writeOn(tap *Tap, b []byte, start time.Time) {
	tap.began(b, start)
	tap.wrote(tap.take(b, start))
}

// A pipelined request's waiter is told when a request of one of its
// opcodes naming its key is written, and only then.
func TestExpectSeesItsRequest(t *testing.T) {
	tap := New(Config{})
	w := tap.Expect("/a/_c_x-lock-", OpCreate, OpMulti)
	writeOn(tap, frame(OpGetData, "/a/_c_x-lock-"), time.Now()) // another opcode
	writeOn(tap, frame(OpCreate, "/a/other"), time.Now())       // another path
	select {
	case <-w.Sent():
		t.Fatal("sent before its request was written")
	default:
	}
	if _, ok := w.WrittenAt(); ok {
		t.Fatal("a write time before its request was written")
	}
	start := time.Now()
	writeOn(tap, frame(OpMulti, "/a/_c_x-lock-"), start)
	select {
	case <-w.Sent():
	default:
		t.Fatal("not sent after its request was written")
	}
	if at, ok := w.WrittenAt(); !ok || !at.Equal(start) {
		t.Fatalf("written at %v, %v; want %v", at, ok, start)
	}
	tap.Forget("/a/_c_x-lock-", w) // already gone: nothing happens
}

// A request's write time is known as its write begins, before its bytes
// go out: go-zookeeper's receive loop can hand the reply to the caller
// before the write returns to the send loop. Known only once the bytes
// were out, a proof answered first found no write time of its own and was
// dated by the first request written after its queueing, a whole second
// early in a loaded make test's zklock.TestSyncDatedByItsOwnWrite.
func TestWrittenAtBeforeTheReply(t *testing.T) {
	tap := New(Config{})
	w := tap.Expect("/", OpSync)
	b, start := frame(OpSync, "/"), time.Now()
	tap.began(b, start)
	told := tap.take(b, start)
	// The bytes are out, the reply is read and the proof answered, all
	// before the send loop gets back to tell the waiter.
	if at, ok := w.WrittenAt(); !ok || !at.Equal(start) {
		t.Fatalf("written at %v, %v, as the reply comes; want %v", at, ok, start)
	}
	tap.wrote(told)
	select {
	case <-w.Sent():
	default:
		t.Fatal("not sent once its bytes were out")
	}
}

// A write that began before a waiter was registered is not its request's,
// even when the tap tells it after: the lease's sync A begins its write,
// its reply comes and the next sync B's waiter is registered (same key,
// same opcode), all before A's send loop, descheduled on a loaded machine,
// gets back to tell A's write. Told by A, B's waiter took A's write time,
// a whole renewal period early, and zklock.TestLeaseCountsFromTheWrite
// lapsed in a loaded make test (traced: B's own write named no waiter).
func TestLateToldWriteTakesNoLaterWaiter(t *testing.T) {
	tap := New(Config{})
	a, aStart := frame(OpSync, "/"), time.Now()
	tap.began(a, aStart)
	aw := tap.take(a, aStart) // A's write begins: no waiter yet
	wb := tap.Expect("/", OpSync)
	tap.wrote(aw) // A told late, after B's waiter came
	if at, ok := wb.WrittenAt(); ok {
		t.Fatalf("B's waiter took A's write, begun before it, as its own (%v)", at)
	}
	bStart := aStart.Add(time.Second)
	writeOn(tap, frame(OpSync, "/"), bStart)
	if at, ok := wb.WrittenAt(); !ok || !at.Equal(bStart) {
		t.Fatalf("B written at %v, %v; want its own write, %v", at, ok, bStart)
	}
}

// A request is counted (Written) before its bytes reach the socket: the
// server may answer, and go-zookeeper's receive loop hand the reply to its
// caller, before the socket's Write returns to the send loop. Here the
// socket's Write cannot return until the test reads the far end, and the
// count is checked before that. (Counted after the write, as before, the
// count lagged a reply: a zklock test that listed a queue once read 0.)
func TestWrittenCountsBeforeTheBytesGoOut(t *testing.T) {
	near, far := net.Pipe()
	defer far.Close()
	tap := New(Config{Dial: func(string, string, time.Duration) (net.Conn, error) { return near, nil }})
	c, err := tap.Dialer()("tcp", "pipe", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := frame(OpGetChildren2, "/a")
	done := make(chan error, 1)
	go func() {
		_, err := c.Write(req)
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for tap.Written(OpGetChildren2) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := tap.Written(OpGetChildren2); n != 1 {
		t.Fatalf("while the request's bytes wait for the socket: Written = %d, want 1", n)
	}
	if _, err := io.ReadFull(far, make([]byte, len(req))); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := tap.Written(OpGetChildren2); n != 1 {
		t.Errorf("after the write: Written = %d, want 1", n)
	}
}

// FirstWriteAfter dates the first write after a mark.
func TestFirstWriteAfterMark(t *testing.T) {
	tap := New(Config{})
	t0 := time.Now()
	tap.began(nil, t0)
	m := tap.Mark()
	if _, ok := tap.FirstWriteAfter(m); ok {
		t.Fatal("a write after the mark before any was made")
	}
	tap.began(nil, t0.Add(time.Millisecond))
	at, ok := tap.FirstWriteAfter(m)
	if !ok || !at.Equal(t0.Add(time.Millisecond)) {
		t.Fatalf("FirstWriteAfter = %v, %v", at, ok)
	}
}

package wire

import (
	"encoding/binary"
	"testing"
	"time"
)

// Touches answers with the latest packet seen touched by a time, and only
// from what it still keeps.
func TestTouchesBefore(t *testing.T) {
	ts := Touches{grain: touchGrain}
	t0 := time.Unix(1000, 0)
	at := func(u int) time.Time { return t0.Add(time.Duration(u) * 20 * time.Millisecond) } // a unit: two grains
	if _, ok := ts.Before(at(5)); ok {
		t.Fatal("a touch before any was noted")
	}
	ts.Confirm(at(0), at(10))
	ts.Confirm(at(5), at(12))
	ts.Confirm(at(4), at(20)) // written before the latest: adds nothing
	ts.Confirm(at(15), at(30))
	for _, c := range []struct {
		by   int
		want int
		ok   bool
	}{{9, 0, false}, {10, 0, true}, {11, 0, true}, {12, 5, true}, {29, 5, true}, {30, 15, true}, {99, 15, true}} {
		w, ok := ts.Before(at(c.by))
		if ok != c.ok || ok && !w.Equal(at(c.want)) {
			t.Errorf("Before(%d) = %v, %v; want %d, %v", c.by, w.Sub(t0), ok, c.want, c.ok)
		}
	}
	before := ts.n
	ts.Confirm(at(15).Add(time.Millisecond), at(31)) // within a grain of the latest: nothing
	if ts.n != before {
		t.Error("a touch within a grain of the latest was kept")
	}
	for i := range 2 * touchRing {
		ts.Confirm(at(100+i), at(200+i))
	}
	if _, ok := ts.Before(at(199)); ok {
		t.Error("answered from an entry that dropped off")
	}
}

// SeenAfter answers with when the first packet written after a time was
// seen touched: the time a chain's k may be written from, π later.
func TestTouchesSeenAfter(t *testing.T) {
	ts := Touches{grain: touchGrain}
	t0 := time.Unix(1000, 0)
	at := func(u int) time.Time { return t0.Add(time.Duration(u) * 20 * time.Millisecond) }
	if _, ok := ts.SeenAfter(at(0)); ok {
		t.Fatal("a touch before any was noted")
	}
	ts.Confirm(at(0), at(10))
	ts.Confirm(at(5), at(12))
	ts.Confirm(at(15), at(30))
	for _, c := range []struct {
		after int
		want  int
		ok    bool
	}{{-1, 10, true}, {0, 12, true}, {4, 12, true}, {5, 30, true}, {14, 30, true}, {15, 0, false}, {99, 0, false}} {
		a, ok := ts.SeenAfter(at(c.after))
		if ok != c.ok || ok && !a.Equal(at(c.want)) {
			t.Errorf("SeenAfter(%d) = %v, %v; want %d, %v", c.after, a.Sub(t0), ok, c.want, c.ok)
		}
	}
	for i := range 2 * touchRing {
		ts.Confirm(at(100+i), at(200+i))
	}
	if a, ok := ts.SeenAfter(at(0)); !ok || !a.Equal(at(200+touchRing)) {
		t.Errorf("past the ring: %v, %v; want the oldest kept, %d", a.Sub(t0), ok, 200+touchRing)
	}
}

// A connection's replies confirm what they answer and every packet before
// it: by xid, a ping's the oldest ping out; a watch event confirms nothing,
// an AddAuth's reply takes its packet out but confirms nothing (the server
// answers it without touching the session, possibly ahead of the packets
// before it); the connect answer with a session is a handshake, confirmed
// too. Frames are read in any split.
func TestRepliesConfirmTouches(t *testing.T) {
	tap := New(Config{})
	rec := tap.NewRecorder()
	t0 := time.Now()
	rec.Write(make([]byte, 48)) // the connect request
	req := func(xid int32) []byte {
		b := binary.BigEndian.AppendUint32(nil, 8)
		b = binary.BigEndian.AppendUint32(b, uint32(xid))
		return binary.BigEndian.AppendUint32(b, 9)
	}
	answer := binary.BigEndian.AppendUint32(nil, 36)
	answer = binary.BigEndian.AppendUint32(answer, 0)
	answer = binary.BigEndian.AppendUint32(answer, 4000)
	answer = binary.BigEndian.AppendUint64(answer, 0x1234)
	answer = append(binary.BigEndian.AppendUint32(answer, 16), make([]byte, 16)...)
	for i := range answer { // byte by byte
		rec.Read(answer[i : i+1])
	}
	h, ok := tap.LastHandshake()
	if !ok || h.SessionID != 0x1234 || h.Timeout != 4*time.Second || h.Written.Before(t0) {
		t.Fatalf("handshake %+v, %v", h, ok)
	}
	connected, _ := tap.Touches().Before(time.Now())
	if !connected.Equal(h.Written) {
		t.Fatalf("the connect request not confirmed: %v, want %v", connected, h.Written)
	}
	// Written: an auth, a request, a ping, another request.
	var written [4]time.Time
	for i, xid := range []int32{xidAuth, 1, -2, 2} {
		time.Sleep(15 * time.Millisecond) // more than a grain apart
		rec.Write(req(xid))
		w, _ := tap.FirstWriteAfter(tap.Mark() - 1)
		written[i] = w
	}
	reply := func(xid int32, body int) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(4+body))
		b = binary.BigEndian.AppendUint32(b, uint32(xid))
		return append(b, make([]byte, body)...)
	}
	latest := func() time.Time { w, _ := tap.Touches().Before(time.Now()); return w }
	rec.Read(reply(-1, 20)) // a watch event
	rec.Read(reply(xidAuth, 12))
	if !latest().Equal(h.Written) {
		t.Fatal("a watch event or an auth reply confirmed a touch")
	}
	f := reply(-2, 12) // the ping's reply, in two reads across its head
	rec.Read(f[:6])
	rec.Read(f[6:])
	if !latest().Equal(written[2]) {
		t.Fatalf("the ping's reply confirmed %v, want %v", latest(), written[2])
	}
	rec.Read(reply(1, 12)) // request 1 was taken out with the ping: nothing
	if !latest().Equal(written[2]) {
		t.Fatal("a reply to a packet already confirmed moved the touch back")
	}
	rec.Read(reply(2, 12))
	if !latest().Equal(written[3]) {
		t.Fatalf("request 2's reply confirmed %v, want %v", latest(), written[3])
	}
}

// TestPingDatesNoProof: a request handed to the client at a mark, then a
// ping written (go-zookeeper's ticker, outside its requests' order), then
// the request itself: the request's proof is dated by its own write. The
// ring counted the ping, and the proof was dated by it: as old as its
// queueing, however long the request waited to be written.
func TestPingDatesNoProof(t *testing.T) {
	tap := New(Config{})
	rec := tap.NewRecorder()
	rec.Write(make([]byte, 48)) // the connect request
	frame := func(xid, op int32) []byte {
		b := binary.BigEndian.AppendUint32(nil, 8)
		b = binary.BigEndian.AppendUint32(b, uint32(xid))
		return binary.BigEndian.AppendUint32(b, uint32(op))
	}
	mark := tap.Mark()
	rec.Write(frame(-2, opPing))
	time.Sleep(15 * time.Millisecond)
	before := time.Now()
	rec.Write(frame(1, OpSync))
	at, ok := tap.FirstWriteAfter(mark)
	if !ok || at.Before(before) {
		t.Fatalf("the sync's proof dated %v before its write (ok %v): by the ping's", before.Sub(at), ok)
	}
}

// An auth as go-zookeeper v1.0.4 sends it (AddAuth, and resendZkAuth on
// each new connection): an ordinary xid from its counter, opcode 100. The
// server answers it without touching the session, possibly ahead of a
// request written before it: its reply confirms nothing, and leaves the
// request before it to its own reply. Told apart by the Java client's xid
// (-4) alone, the reply confirmed the auth's write and took the request
// out unconfirmed (the ninth review's item 1).
func TestAuthReplyConfirmsNothing(t *testing.T) {
	tap := New(Config{})
	rec := tap.NewRecorder()
	rec.Write(make([]byte, 48)) // the connect request
	answer := binary.BigEndian.AppendUint32(nil, 36)
	answer = binary.BigEndian.AppendUint32(answer, 0)
	answer = binary.BigEndian.AppendUint32(answer, 4000)
	answer = binary.BigEndian.AppendUint64(answer, 0x1234)
	rec.Read(append(binary.BigEndian.AppendUint32(answer, 16), make([]byte, 16)...))
	h, _ := tap.LastHandshake()
	frame := func(xid, op int32) []byte {
		b := binary.BigEndian.AppendUint32(nil, 8)
		b = binary.BigEndian.AppendUint32(b, uint32(xid))
		return binary.BigEndian.AppendUint32(b, uint32(op))
	}
	reply := func(xid int32) []byte {
		b := binary.BigEndian.AppendUint32(nil, 16)
		b = binary.BigEndian.AppendUint32(b, uint32(xid))
		return append(b, make([]byte, 12)...)
	}
	latest := func() time.Time { w, _ := tap.Touches().Before(time.Now()); return w }
	time.Sleep(15 * time.Millisecond) // more than a grain apart
	rec.Write(frame(1, OpGetData))
	request, _ := tap.FirstWriteAfter(tap.Mark() - 1)
	time.Sleep(15 * time.Millisecond)
	rec.Write(frame(2, opAuth))
	rec.Read(reply(2)) // the auth, answered first
	if got := latest(); !got.Equal(h.Written) {
		t.Fatalf("the auth's reply confirmed a touch written %v after the handshake", got.Sub(h.Written))
	}
	rec.Read(reply(1))
	if got := latest(); !got.Equal(request) {
		t.Fatalf("the request before the auth confirmed %v after the handshake, want its write, %v after",
			got.Sub(h.Written), request.Sub(h.Written))
	}
}

package session

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// The honesty rule for the double's auths (lease_connect_test.go), held
// against a real server on a connection of our own that speaks
// ZooKeeper's protocol as go-zookeeper v1.0.4 does: a connect request,
// then auth packets only (opcode 100, ordinary xids from 1), one every
// T/4, and no ping.
//
//   - The server answers each auth with a reply that carries its xid and
//     no error.
//   - It answers them without touching the session: the session expires
//     and the server closes the connection, T or a little more after the
//     connect, while the auths go on being answered. Were an auth a touch,
//     each would put the expiry T past itself, a quarter of T after the
//     one before.
func conformAuth(t *testing.T, addr string) {
	conn, connected, granted := rawSession(t, addr)
	defer conn.Close()
	replies, done := make(chan authReply), make(chan struct{})
	defer close(done)
	go readReplies(conn, replies, done)
	tick := time.NewTicker(granted / 4)
	defer tick.Stop()
	xid, answered := int32(1), 0 // the latest auth written, the replies read
	if _, err := conn.Write(authFrame(xid)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.After(3 * granted); ; {
		select {
		case r, ok := <-replies:
			if !ok {
				closed := time.Since(connected)
				t.Logf("the session of auths alone closed %v after its connect (T %v), %d auths answered",
					closed.Round(time.Millisecond), granted, answered)
				if closed < granted {
					t.Errorf("closed %v after the connect: before T = %v", closed, granted)
				}
				if answered < 4 {
					t.Errorf("only %d auths answered before the close: the session was not kept busy", answered)
				}
				return
			}
			if answered++; r.xid != int32(answered) || r.err != 0 {
				t.Fatalf("auth %d answered with xid %d, error %d", answered, r.xid, r.err)
			}
		case <-tick.C:
			xid++
			if _, err := conn.Write(authFrame(xid)); err != nil {
				t.Logf("auth %d not written: %v", xid, err) // the server closed it: the read side says when
			}
		case <-deadline:
			t.Fatalf("the session still open %v after its connect, its auths answered every T/4: each touched it", 3*granted)
		}
	}
}

// rawSession opens a connection to addr in a new session asking conformT,
// as go-zookeeper's connect does, and returns it with when it connected
// and the timeout the server granted.
func rawSession(t *testing.T, addr string) (conn net.Conn, connected time.Time, granted time.Duration) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	connected = time.Now()
	if _, err := conn.Write(connectRequest(conformT)); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	ms, sid, err := readConnectAnswer(conn)
	if err != nil || sid == 0 || ms <= 0 {
		conn.Close()
		t.Fatalf("connect answer: session %#x, %d ms, %v", sid, ms, err)
	}
	return conn, connected, time.Duration(ms) * time.Millisecond
}

// connectRequest is go-zookeeper's for a new session asking timeout:
// protocol version, last zxid seen, timeout (ms), session 0, an empty
// password of 16 bytes.
func connectRequest(timeout time.Duration) []byte {
	b := binary.BigEndian.AppendUint32(nil, 44)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(timeout/time.Millisecond))
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint32(b, 16)
	return append(b, make([]byte, 16)...)
}

// readConnectAnswer reads the server's connect answer: the timeout it
// granted (ms) and the session.
func readConnectAnswer(r io.Reader) (ms int32, sid int64, err error) {
	body, err := readFrame(r)
	if err != nil {
		return 0, 0, err
	}
	if len(body) < 16 {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return int32(binary.BigEndian.Uint32(body[4:8])), int64(binary.BigEndian.Uint64(body[8:16])), nil
}

// authReply is a reply's header: its xid and error code.
type authReply struct{ xid, err int32 }

// readReplies sends each reply's header read from r, and closes out once
// the connection ends (or stops once done is closed).
func readReplies(r io.Reader, out chan<- authReply, done <-chan struct{}) {
	defer close(out)
	for {
		body, err := readFrame(r)
		if err != nil || len(body) < 16 {
			return
		}
		select {
		case out <- authReply{xid: int32(binary.BigEndian.Uint32(body[0:4])), err: int32(binary.BigEndian.Uint32(body[12:16]))}:
		case <-done:
			return
		}
	}
}

// readFrame reads one length-prefixed frame's body.
func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, err := io.ReadFull(r, body)
	return body, err
}

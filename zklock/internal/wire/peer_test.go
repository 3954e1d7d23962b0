package wire

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// peer is the far end of a go-zookeeper client's connections, dialed
// through a tap over net.Pipe: it records the request frames the tap
// passes on and answers each as a ZooKeeper server would, with the
// fields go-zookeeper decodes (a path ending in /e does not exist),
// echoing the paths it was sent where a real server returns one. It stands in for the server only to show what the
// frames are; chroot_zk_test.go in package zklock runs the chroot against
// a real one.
type peer struct {
	t        testing.TB
	mu       sync.Mutex
	frames   [][]byte   // requests, pings left out, in arrival order
	pings    [][]byte   // the pings
	far      []net.Conn // one per connection dialed
	timeoutM int32      // the session timeout granted, ms
	tap      *Tap       // the client's, once connect made it
}

// newPeer grants a 6-s session: go-zookeeper gives up on a connection
// that is silent for two thirds of it, and at 600 ms a loaded race run
// starved the pipe that long, so the client dialed again on its own: a
// chroot scene's frames then differed from its twin's, and a wait for
// setWatches found the earlier reconnection's (make test run of
// 2026-11-28 12:24 UTC, which hung). Pings come every 2 s.
func newPeer(t testing.TB) *peer { return &peer{t: t, timeoutM: 6000} }

// dial is the tap's Dial: a pipe whose far end the peer serves.
func (p *peer) dial(string, string, time.Duration) (net.Conn, error) {
	near, far := net.Pipe()
	p.mu.Lock()
	p.far = append(p.far, far)
	p.mu.Unlock()
	go p.serve(far)
	return near, nil
}

// connect makes a go-zookeeper client through a tap configured by cfg,
// with the peer as its server and onEvent, if given, its event callback;
// it is closed when the test ends.
func (p *peer) connect(cfg Config, onEvent ...zk.EventCallback) *zk.Conn {
	cfg.Dial = p.dial
	tap := New(cfg)
	p.tap = tap
	cb := func(zk.Event) {}
	if len(onEvent) > 0 {
		cb = onEvent[0]
	}
	conn, _, err := zk.Connect([]string{"127.0.0.1:2181"}, 4*time.Second, zk.WithDialer(tap.Dialer()),
		zk.WithEventCallback(cb), zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() {
		conn.Close()
		p.drop()
	})
	return conn
}

// drop closes the connection being served: go-zookeeper dials again.
func (p *peer) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.far {
		c.Close()
	}
	p.far = nil
}

// requests returns the frames received so far.
func (p *peer) requests() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.frames...)
}

// push sends a watch event of type typ on path to the live connection.
func (p *peer) push(typ int32, path string) {
	b := header(-1, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(typ))
	b = binary.BigEndian.AppendUint32(b, 3) // SyncConnected
	b = appendString(b, path)
	if _, err := p.live().Write(finish(b)); err != nil {
		p.t.Error(err)
	}
}

// live returns the connection dialed last, waiting up to 10 s for one
// after a drop. It fails the test rather than index an empty list under
// p.mu: that panic left the mutex held, and the cleanup's drop waited on
// it until go test's timeout.
func (p *peer) live() net.Conn {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		var c net.Conn
		if len(p.far) > 0 {
			c = p.far[len(p.far)-1]
		}
		p.mu.Unlock()
		if c != nil {
			return c
		}
		if time.Now().After(deadline) {
			p.t.Fatal("no connection dialed in 10 s")
		}
	}
}

func (p *peer) serve(c net.Conn) {
	if _, err := readFrame(c); err != nil { // the connect request
		return
	}
	var resp []byte
	resp = binary.BigEndian.AppendUint32(resp, 0)
	resp = binary.BigEndian.AppendUint32(resp, 0) // protocol version
	resp = binary.BigEndian.AppendUint32(resp, uint32(p.timeoutM))
	resp = binary.BigEndian.AppendUint64(resp, 1) // the session id, the same on every connection
	resp = appendString(resp, "0123456789abcdef")
	if _, err := c.Write(finish(resp)); err != nil {
		return
	}
	for {
		f, err := readFrame(c)
		if err != nil {
			return
		}
		xid := int32(binary.BigEndian.Uint32(f[4:8]))
		p.mu.Lock()
		if xid == -2 {
			p.pings = append(p.pings, f)
		} else {
			p.frames = append(p.frames, f)
		}
		p.mu.Unlock()
		if _, err := c.Write(reply(f)); err != nil {
			return
		}
	}
}

// reply answers request f as a server would, enough for go-zookeeper.
func reply(f []byte) []byte {
	op := opcode(f)
	xid := int32(binary.BigEndian.Uint32(f[4:8]))
	if op == opExists && strings.HasSuffix(pathAt(f, 12), "/e") {
		return finish(header(xid, -101)) // ZNONODE: an exist watch, not a data watch
	}
	if op == opSetAuth {
		// ZooKeeper answers an auth packet itself (processPacket), with
		// zxid 0: go-zookeeper's receive loop writes no lastZxid for it.
		b := header(xid, 0)
		binary.BigEndian.PutUint64(b[8:16], 0)
		return finish(b)
	}
	b := header(xid, 0)
	stat := make([]byte, statLen)
	switch op {
	case OpCreate, OpSync:
		b = appendString(b, pathAt(f, 12))
	case opContainer, opCreateTTL, opCreate2:
		b = append(appendString(b, pathAt(f, 12)), stat...)
	case opExists, OpSetData, opSetACL:
		b = append(b, stat...)
	case OpGetData, opReconfig:
		b = append(binary.BigEndian.AppendUint32(b, 0xffffffff), stat...)
	case opGetACL, OpGetChildren2:
		b = append(binary.BigEndian.AppendUint32(b, 0), stat...)
	case opGetChildren:
		b = binary.BigEndian.AppendUint32(b, 0)
	case OpMulti:
		b = multiReply(b, f)
	}
	return finish(b)
}

// multiReply appends the results of multi f: a create's path, a
// setData's stat, nothing for a delete or a check.
func multiReply(b, f []byte) []byte {
	offs, _ := multiPaths(nil, f)
	for _, off := range offs {
		typ := int32(binary.BigEndian.Uint32(f[off-9:]))
		b = binary.BigEndian.AppendUint32(b, uint32(typ))
		b = append(b, 0)
		b = binary.BigEndian.AppendUint32(b, 0)
		switch typ {
		case OpCreate:
			b = appendString(b, pathAt(f, off))
		case OpSetData:
			b = append(b, make([]byte, statLen)...)
		}
	}
	b = binary.BigEndian.AppendUint32(b, 0xffffffff)
	b = append(b, 1)
	return binary.BigEndian.AppendUint32(b, 0xffffffff)
}

// header starts a reply frame: room for the length, xid, zxid, error.
func header(xid, err int32) []byte {
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	b = binary.BigEndian.AppendUint64(b, 7)
	return binary.BigEndian.AppendUint32(b, uint32(err))
}

// finish writes the frame's length into its first four bytes.
func finish(b []byte) []byte {
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
}

func pathAt(f []byte, off int) string {
	n := int(binary.BigEndian.Uint32(f[off:]))
	return string(f[off+4 : off+4+n])
}

func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	f := make([]byte, 4+binary.BigEndian.Uint32(n[:]))
	copy(f, n[:])
	_, err := io.ReadFull(r, f[4:])
	return f, err
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

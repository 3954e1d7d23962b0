package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/zkcompat"
	"github.com/tierlock/tierlock/zklock"
)

// The idle sessions of stress -idle-cost, and the count of what they
// write, by opcode, on the wire.

// ZooKeeper's opcodes counted apart (zookeeper.jute's OpCode).
const (
	opSync = 9
	opPing = 11
)

// wireCount counts the requests written by every connection dialed
// through its dialer, the connect request of each left out.
type wireCount struct {
	pings, syncs, other atomic.Int64
}

// wireCounts are a reading of a wireCount.
type wireCounts struct{ pings, syncs, other int64 }

func (w *wireCount) read() wireCounts {
	return wireCounts{w.pings.Load(), w.syncs.Load(), w.other.Load()}
}

func (a wireCounts) minus(b wireCounts) wireCounts {
	return wireCounts{a.pings - b.pings, a.syncs - b.syncs, a.other - b.other}
}

func (a wireCounts) total() int64 { return a.pings + a.syncs + a.other }

// dial is a zk.Dialer whose connections count what they write.
func (w *wireCount) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, f: frameCounter{count: w.count}}, nil
}

func (w *wireCount) count(op int32) {
	switch op {
	case opPing:
		w.pings.Add(1)
	case opSync:
		w.syncs.Add(1)
	default:
		w.other.Add(1)
	}
}

// countingConn passes what is written through a frameCounter.
type countingConn struct {
	net.Conn
	mu sync.Mutex
	f  frameCounter
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	c.f.feed(p[:n])
	c.mu.Unlock()
	return n, err
}

// frameCounter reads a client's stream of requests, each a 4-byte length
// and a body that starts with the xid and the opcode, however the writes
// split them, and calls count with each opcode; the first frame, the
// connect request, has no header and is not counted.
type frameCounter struct {
	hdr       [12]byte // length, xid, opcode
	got       int      // bytes of hdr read
	skip      int      // bytes of the current body still to pass
	connected bool     // the connect request was passed
	count     func(op int32)
}

func (f *frameCounter) feed(p []byte) {
	for len(p) > 0 {
		if f.skip > 0 {
			n := min(f.skip, len(p))
			f.skip -= n
			p = p[n:]
			continue
		}
		n := copy(f.hdr[f.got:], p)
		f.got += n
		p = p[n:]
		if f.got < len(f.hdr) {
			return
		}
		f.got = 0
		f.skip = int(binary.BigEndian.Uint32(f.hdr[:4])) - 8
		if !f.connected {
			f.connected = true
			continue
		}
		f.count(int32(binary.BigEndian.Uint32(f.hdr[8:12])))
	}
}

// idleSession is one open session that locks nothing.
type idleSession interface {
	// alive reports whether the session is still the one opened.
	alive() bool
	close()
}

// openIdle opens a session of implementation im, its connection dialed
// through w, and returns once it is established.
func openIdle(ctx context.Context, im proto.Impl, servers []string, cfg idleConfig, w *wireCount) (idleSession, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	if im == proto.Tier {
		s, err := zklock.Connect(ctx, servers, zklock.WithSessionTimeout(cfg.SessionTimeout), zklock.WithDialer(w.dial))
		if err != nil {
			return nil, err
		}
		return &tierIdle{s: s, id: s.SessionID()}, nil
	}
	conn, events, err := zk.Connect(servers, cfg.SessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}), zk.WithDialer(w.dial))
	if err != nil {
		return nil, err
	}
	// go-zookeeper drops events when its channel is full: read it until
	// the connection closes (the drop-in does not read it either).
	go func() {
		for range events {
		}
	}()
	for conn.State() != zk.StateHasSession {
		if !sleepCtx(ctx, 5*time.Millisecond) {
			conn.Close()
			return nil, fmt.Errorf("connect: %w", ctx.Err())
		}
	}
	c := &connIdle{conn: conn, id: conn.SessionID()}
	if im == proto.Zkcompat {
		// The drop-in's session starts at NewLock and lives as long as
		// the connection; the handle is never locked.
		zkcompat.NewLock(conn, "/tierlock-stress/idle-cost", zk.WorldACL(zk.PermAll))
		c.compat = true
	}
	return c, nil
}

// connIdle is a go-zookeeper connection, with the drop-in's session on
// it when compat.
type connIdle struct {
	conn   *zk.Conn
	id     int64
	compat bool
}

func (c *connIdle) alive() bool {
	return c.conn.State() == zk.StateHasSession && c.conn.SessionID() == c.id
}

func (c *connIdle) close() {
	if c.compat {
		zkcompat.CloseConn(c.conn)
	}
	c.conn.Close()
}

// tierIdle is a session of zklock.Connect.
type tierIdle struct {
	s  *zklock.Session
	id int64
}

func (c *tierIdle) alive() bool {
	return c.s.State() == zklock.StateConnected && c.s.SessionID() == c.id
}

func (c *tierIdle) close() { _ = c.s.Close() }

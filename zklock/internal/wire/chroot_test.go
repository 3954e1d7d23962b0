package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The chroot's oracle is go-zookeeper's own encoder: a client chrooted at
// /app that names /x must send the very bytes that a client without a
// chroot sends when it names /app/x, and must be told /x where that one
// is told /app/x. script makes every request go-zookeeper v1.0.4 can send
// (every path op, a multi of each op it allows, setWatches with a path of
// each watch kind, setAuth, reconfig, ping, close), through a peer that
// echoes paths as a server does.

// script makes the requests, naming paths under root, and returns the
// paths the client was told (created nodes, a sync, a multi's create, the
// three watch events).
func script(t *testing.T, p *peer, conn *zk.Conn, root string) []string {
	t.Helper()
	at := func(rel string) string {
		if rel == "/" && root != "" {
			return root
		}
		return root + rel
	}
	acl := zk.WorldACL(zk.PermAll)
	var told []string
	check := func(path string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if path != "" {
			told = append(told, path)
		}
	}
	check(conn.Create(at("/a"), []byte("d"), 0, acl))
	check(conn.CreateContainer(at("/c"), nil, zk.FlagContainer, acl))
	check(conn.CreateTTL(at("/t"), nil, zk.FlagTTL, acl, time.Minute))
	_, _, err := conn.Exists(at("/a"))
	check("", err)
	_, _, err = conn.Get(at("/"))
	check("", err)
	_, err = conn.Set(at("/a"), nil, -1)
	check("", err)
	_, _, err = conn.GetACL(at("/a"))
	check("", err)
	_, err = conn.SetACL(at("/a"), acl, -1)
	check("", err)
	_, _, err = conn.Children(at("/a"))
	check("", err)
	check(conn.Sync(at("/a")))
	res, err := conn.Multi(&zk.CreateRequest{Path: at("/m"), Data: []byte("x"), Acl: acl},
		&zk.SetDataRequest{Path: at("/a"), Version: -1}, &zk.DeleteRequest{Path: at("/m"), Version: -1},
		&zk.CheckVersionRequest{Path: at("/"), Version: 0})
	check("", err)
	told = append(told, res[0].String)
	_, err = conn.IncrementalReconfig(nil, []string{"3"}, -1)
	check("", err)
	check("", conn.Delete(at("/a"), -1))

	// A watch of each kind, re-armed with setWatches on a new connection.
	_, _, exist, err := conn.ExistsW(at("/e"))
	check("", err)
	_, _, data, err := conn.GetW(at("/"))
	check("", err)
	_, _, child, err := conn.ChildrenW(at("/c"))
	check("", err)
	before := len(p.requests())
	p.drop()
	waitFor(t, "setWatches", func() bool { return sent(p, before, OpSetWatches) })
	p.push(int32(zk.EventNodeCreated), "/app/e")
	p.push(int32(zk.EventNodeDataChanged), "/app")
	p.push(int32(zk.EventNodeChildrenChanged), "/app/c")
	for _, ch := range []<-chan zk.Event{exist, data, child} {
		select {
		case ev := <-ch:
			told = append(told, ev.Path)
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event")
		}
	}
	check("", conn.AddAuth("digest", []byte("u:p"))) // after the reconnect, whose re-sent credentials race setWatches for an xid
	waitFor(t, "a ping", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.pings) > 0 })
	conn.Close()
	waitFor(t, "close", func() bool { return sent(p, 0, opClose) })
	return told
}

// sent reports whether a request of op came after the first from frames:
// a wait for what a reconnection sends must not find an earlier one's.
func sent(p *peer, from int, op int32) bool {
	for _, f := range p.requests()[from:] {
		if opcode(f) == op {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s", what)
		}
	}
}

// Every request a chrooted client sends is the request of a client
// without a chroot naming the full paths, byte for byte; every path it is
// told is the other's without the chroot ("/app" itself is "/").
func TestChrootFramesAreTheFullPathsFrames(t *testing.T) {
	chrooted, plain := newPeer(t), newPeer(t)
	toldChrooted := script(t, chrooted, chrooted.connect(Config{Chroot: "/app"}), "")
	toldPlain := script(t, plain, plain.connect(Config{}), "/app")

	got, want := chrooted.requests(), plain.requests()
	if len(got) != len(want) {
		t.Fatalf("%d requests, want %d", len(got), len(want))
	}
	ops := map[int32]bool{}
	for i := range got {
		ops[opcode(want[i])] = true
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("request %d (opcode %d):\n got %q\nwant %q", i, opcode(want[i]), got[i], want[i])
		}
	}
	for _, op := range []int32{OpCreate, opContainer, opCreateTTL, OpDelete, opExists, OpGetData, OpSetData, opGetACL, opSetACL,
		OpSync, OpGetChildren2, OpMulti, opReconfig, opSetAuth, OpSetWatches, opClose} {
		if !ops[op] {
			t.Errorf("the script sent no request of opcode %d", op)
		}
	}
	if len(chrooted.pings) == 0 || !bytes.Equal(chrooted.pings[0], plain.pings[0]) {
		t.Errorf("pings %q, want %q", chrooted.pings, plain.pings)
	}
	var stripped []string
	for _, p := range toldPlain {
		if p == "/app" {
			p = "/"
		}
		stripped = append(stripped, strings.TrimPrefix(p, "/app"))
	}
	if fmt.Sprint(toldChrooted) != fmt.Sprint(stripped) {
		t.Errorf("told %q, want %q", toldChrooted, stripped)
	}
	t.Logf("told %q", toldChrooted)
}

// Only the chroot comes off a path the server returns, never a name that
// merely starts like it; a reply that is an error is left as it is.
func TestChrootStripsOnlyTheChroot(t *testing.T) {
	r := chroot{prefix: []byte("/app")}
	for path, want := range map[string]string{"/app/x": "/x", "/app": "/", "/apple": "/apple", "/x": "/x", "": ""} {
		f := finish(appendString(header(5, 0), path))
		got := r.response(f, OpCreate)
		if p := pathAt(got, 20); p != want || int(binary.BigEndian.Uint32(got))+4 != len(got) {
			t.Errorf("%q: got %q in a frame of %d bytes (length %d), want %q", path, p, len(got), binary.BigEndian.Uint32(got), want)
		}
	}
	refused := finish(header(5, -110)) // ZNODEEXISTS
	if got := r.response(bytes.Clone(refused), OpCreate); !bytes.Equal(got, refused) {
		t.Errorf("an error reply became %q", got)
	}
}

// A request the chroot cannot read is refused, not sent outside it.
func TestChrootRefusesWhatItCannotRewrite(t *testing.T) {
	r := chroot{prefix: []byte("/app")}
	for name, f := range map[string][]byte{
		"unknown opcode":   finish(appendString(reqHeader(103), "/a")),
		"truncated path":   finish(binary.BigEndian.AppendUint32(reqHeader(OpCreate), 10)),
		"multi of unknown": finish(append(binary.BigEndian.AppendUint32(reqHeader(OpMulti), 99), 0, 0, 0, 0, 0)),
	} {
		if _, err := r.request(nil, f); !errors.Is(err, errChrootFrame) {
			t.Errorf("%s: err = %v, want errChrootFrame", name, err)
		}
	}
}

// PathLen, by which the write path sizes its requests, is the length of
// each path in the request as the chroot rewrites it ("/" the chroot
// itself), and the path's own without a chroot.
func TestPathLenIsTheRewrittenPath(t *testing.T) {
	for _, root := range []string{"", "/app"} {
		tap := New(Config{Chroot: root})
		for _, path := range []string{"/", "/x", "/locks/job-17/_c_0f8fad5b-lock-"} {
			f := finish(binary.BigEndian.AppendUint32(appendString(reqHeader(OpDelete), path), 0xffffffff))
			if root != "" {
				var err error
				if f, err = tap.chroot.request(nil, f); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := tap.PathLen(path), len(pathAt(f, 12)); got != want {
				t.Errorf("chroot %q, path %q: PathLen %d, %d bytes in the request", root, path, got, want)
			}
		}
	}
}

func reqHeader(op int32) []byte {
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint32(b, 9)
	return binary.BigEndian.AppendUint32(b, uint32(op))
}

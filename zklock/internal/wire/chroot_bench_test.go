package wire

import (
	"encoding/binary"
	"testing"

	"github.com/go-zookeeper/zk"
)

// The cost of the rewrite per frame, on the frames of a lock's
// acquisition: its create (a protected name, host and pid in the data, the
// world ACL) and the reply with the node's path, and a watch event.
// Without a chroot the tap parses nothing (a nil check).
//
//	go test -run '^$' -bench Chroot -count 10 ./zklock/internal/wire
func BenchmarkChrootRequest(b *testing.B) {
	r := chroot{prefix: []byte("/myapp")}
	f := reqHeader(OpCreate)
	f = appendString(f, "/locks/job-17/_c_0f8fad5b-d9cb-469f-a165-70867728950e-lock-")
	f = appendString(f, `{"host":"worker-3.example.com","pid":41234}`)
	f = binary.BigEndian.AppendUint32(f, 1) // one ACL: perms, scheme, id
	f = binary.BigEndian.AppendUint32(f, uint32(zk.PermAll))
	f = appendString(appendString(f, "world"), "anyone")
	f = finish(binary.BigEndian.AppendUint32(f, uint32(zk.FlagEphemeral|zk.FlagSequence)))
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if out, err = r.request(out, f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChrootReply(b *testing.B) {
	r := chroot{prefix: []byte("/myapp")}
	f := finish(appendString(header(5, 0), "/myapp/locks/job-17/_c_0f8fad5b-d9cb-469f-a165-70867728950e-lock-0000000042"))
	work := make([]byte, len(f))
	b.ReportAllocs()
	for b.Loop() {
		copy(work, f)
		r.response(work, OpCreate)
	}
}

func BenchmarkChrootEvent(b *testing.B) {
	r := chroot{prefix: []byte("/myapp")}
	f := header(-1, 0)
	f = binary.BigEndian.AppendUint32(f, uint32(zk.EventNodeDeleted))
	f = binary.BigEndian.AppendUint32(f, 3)
	f = finish(appendString(f, "/myapp/locks/job-17/_c_0f8fad5b-d9cb-469f-a165-70867728950e-lock-0000000041"))
	work := make([]byte, len(f))
	b.ReportAllocs()
	for b.Loop() {
		copy(work, f)
		r.response(work, opNotify)
	}
}

// The whole client side of a request, chroot or none: go-zookeeper's
// encoding, the tap, the rewrite, a pipe to the peer and back, the
// reply's decoding; the peer, in the same process, costs the same in
// both. A lock node's create, as an acquisition sends it.
//
//	go test -run '^$' -bench ChrootClient -count 10 ./zklock/internal/wire
func BenchmarkChrootClient(b *testing.B) {
	for _, c := range []struct{ name, chroot, root string }{{"plain", "", "/myapp"}, {"chroot", "/myapp", ""}} {
		b.Run(c.name, func(b *testing.B) {
			p := newPeer(b)
			p.timeoutM = 60000 // no ping in the window
			conn := p.connect(Config{Chroot: c.chroot})
			path := c.root + "/locks/job-17/_c_0f8fad5b-d9cb-469f-a165-70867728950e-lock-"
			data, acl := []byte(`{"host":"worker-3.example.com","pid":41234}`), zk.WorldACL(zk.PermAll)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := conn.Create(path, data, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

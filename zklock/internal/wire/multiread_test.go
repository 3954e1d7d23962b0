package wire

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
)

// AppendListings' request is what the chroot reads as a multi of paths:
// getChildren then getData of each, in order, and the closing header.
func TestListingsRequestFrames(t *testing.T) {
	f := requestFrame(OpMultiRead, AppendListings(nil, []string{"/a", "/b/c"}))
	if got, want := framePaths(t, f, OpMultiRead), []string{"/a", "/a", "/b/c", "/b/c"}; !slices.Equal(got, want) {
		t.Errorf("paths %v, want %v", got, want)
	}
	if n, want := len(f), MultiReadBase+ListingSize(2)+ListingSize(4); n != want {
		t.Errorf("request of %d bytes, ListingSize and MultiReadBase say %d", n, want)
	}
}

// ParseListings reads children then stat for each path, an error result
// where an op failed (that listing alone), and refuses an answer cut
// short or without its end.
func TestParseListings(t *testing.T) {
	var b []byte
	head := func(typ int32, done bool, code int32) {
		b = binary.BigEndian.AppendUint32(b, uint32(typ))
		d := byte(0)
		if done {
			d = 1
		}
		b = binary.BigEndian.AppendUint32(append(b, d), uint32(code))
	}
	str := func(s string) { b = append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...) }
	head(opGetChildren, false, 0)
	b = binary.BigEndian.AppendUint32(b, 2)
	str("n-1")
	str("n-0")
	head(OpGetData, false, 0)
	str("")
	stat := make([]byte, statLen)
	binary.BigEndian.PutUint64(stat[0:], 11)  // czxid
	binary.BigEndian.PutUint32(stat[36:], 4)  // cversion
	binary.BigEndian.PutUint32(stat[56:], 2)  // numChildren
	binary.BigEndian.PutUint64(stat[60:], 42) // pzxid
	b = append(b, stat...)
	head(-1, false, -101)
	b = binary.BigEndian.AppendUint32(b, uint32(0xffffff9b)) // -101
	head(-1, false, -101)
	b = binary.BigEndian.AppendUint32(b, uint32(0xffffff9b))
	head(-1, true, -1)
	got, err := ParseListings(Reply{Body: b}, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := zk.Stat{Czxid: 11, Cversion: 4, NumChildren: 2, Pzxid: 42}
	if !slices.Equal(got[0].Children, []string{"n-1", "n-0"}) || got[0].Stat != want || got[0].Err != nil {
		t.Errorf("first listing %+v", got[0])
	}
	if !errors.Is(got[1].Err, zk.ErrNoNode) {
		t.Errorf("second listing's error %v, want zk.ErrNoNode", got[1].Err)
	}
	for _, cut := range []int{len(b) - 9, len(b) - 20, 30} {
		if _, err := ParseListings(Reply{Body: b[:cut]}, 2); err == nil {
			t.Errorf("an answer cut at %d of %d bytes parsed", cut, len(b))
		}
	}
	if _, err := ParseListings(Reply{Err: -6}, 2); err == nil {
		t.Error("an answer with error -6 parsed")
	}
}

// A node's read is one getData op among the listings (NodeReadSize), its
// answer the node's data and stat; the setWatches request that sets their
// watches is what the chroot reads as one (its paths the data watches,
// rewritten), of the size SetWatchesSize says.
func TestNodeReadsAndTheirWatches(t *testing.T) {
	reads := requestFrame(OpMultiRead, AppendEnd(AppendNodeRead(AppendListing(nil, "/a"), "/a/n-1")))
	if got, want := framePaths(t, reads, OpMultiRead), []string{"/a", "/a", "/a/n-1"}; !slices.Equal(got, want) {
		t.Errorf("multiRead paths %v, want %v", got, want)
	}
	if n, want := len(reads), MultiReadBase+ListingSize(2)+NodeReadSize(6); n != want {
		t.Errorf("multiRead of %d bytes, the sizes say %d", n, want)
	}
	set := requestFrame(OpSetWatches, AppendSetWatches(nil, 1<<62, []string{"/a/n-1", "/b"}))
	if got, want := framePaths(t, set, OpSetWatches), []string{"/a/n-1", "/b"}; !slices.Equal(got, want) {
		t.Errorf("setWatches paths %v, want %v", got, want)
	}
	if n, want := len(set), SetWatchesSize(6+2, 2); n != want {
		t.Errorf("setWatches of %d bytes, SetWatchesSize says %d", n, want)
	}
	if z := int64(binary.BigEndian.Uint64(set[12:])); z != 1<<62 {
		t.Errorf("relativeZxid %d", z)
	}

	var b []byte
	b = binary.BigEndian.AppendUint32(b, uint32(OpGetData))
	b = binary.BigEndian.AppendUint32(append(b, 0), 0)
	b = append(binary.BigEndian.AppendUint32(b, 3), "abc"...)
	stat := make([]byte, statLen)
	binary.BigEndian.PutUint64(stat[44:], 0x77) // ephemeralOwner
	b = append(b, stat...)
	b = binary.BigEndian.AppendUint32(b, minusOne)
	b = binary.BigEndian.AppendUint32(append(b, 1), minusOne)
	got, err := ParseReads(Reply{Body: b}, []bool{true})
	if err != nil {
		t.Fatal(err)
	}
	if string(got[0].Data) != "abc" || got[0].Stat.EphemeralOwner != 0x77 || got[0].Children != nil {
		t.Errorf("node read %+v", got[0])
	}
	if _, err := ParseReads(Reply{Body: b}, []bool{false}); err == nil {
		t.Error("a node's read parsed as a listing")
	}
}

// requestFrame frames a request of opcode op with fields body (xid 7).
func requestFrame(op int32, body []byte) []byte {
	f := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	f = binary.BigEndian.AppendUint32(f, 7)
	return append(binary.BigEndian.AppendUint32(f, uint32(op)), body...)
}

// framePaths returns the paths the chroot finds in the request frame f.
func framePaths(t *testing.T, f []byte, op int32) []string {
	t.Helper()
	offs, err := requestPaths(nil, f, op)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range offs {
		n := int(binary.BigEndian.Uint32(f[o:]))
		got = append(got, string(f[o+4:o+4+n]))
	}
	return got
}

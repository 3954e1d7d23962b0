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
	paths := []string{"/a", "/b/c"}
	body := AppendListings(nil, paths)
	f := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	f = binary.BigEndian.AppendUint32(f, 7)
	f = binary.BigEndian.AppendUint32(f, uint32(OpMultiRead))
	f = append(f, body...)
	offs, err := requestPaths(nil, f, OpMultiRead)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range offs {
		n := int(binary.BigEndian.Uint32(f[o:]))
		got = append(got, string(f[o+4:o+4+n]))
	}
	if want := []string{"/a", "/a", "/b/c", "/b/c"}; !slices.Equal(got, want) {
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

package zklock

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Names as each family's client makes them (ZooKeeper appends %010d).
func curatorName(seq int32) string {
	return fmt.Sprintf("_c_0f1e2d3c-4b5a-4697-8877-665544332211-lock-%010d", seq)
}
func gozkName(seq int32) string {
	return fmt.Sprintf("_c_0f1e2d3c4b5a46978877665544332211-lock-%010d", seq)
}
func kazooName(seq int32) string {
	return fmt.Sprintf("8d1c63e2a3b54f0e9c37e3b0f4a1b2c3__lock__%010d", seq)
}
func kazooRName(seq int32) string {
	return fmt.Sprintf("8d1c63e2a3b54f0e9c37e3b0f4a1b2c3__rlock__%010d", seq)
}
func curatorRW(kind string, seq int32) string {
	return fmt.Sprintf("_c_0f1e2d3c-4b5a-4697-8877-665544332211-%s%010d", kind, seq)
}

func TestContender(t *testing.T) {
	for _, c := range []struct {
		name   string
		family Family
		seq    int32
		ok     bool
	}{
		{curatorName(7), FamilyLock, 7, true},
		{gozkName(0), FamilyLock, 0, true},
		{kazooName(12), FamilyKazooLock, 12, true},
		{kazooRName(13), FamilyKazooRead, 13, true},
		{curatorRW("__READ__", 14), FamilyCuratorRead, 14, true},
		{curatorRW("__WRIT__", 15), FamilyCuratorWrite, 15, true},
		{"x__lock__2147483647", FamilyKazooLock, 2147483647, true},
		{kazooName(-2147483648), FamilyKazooLock, -2147483648, true},
		{curatorName(-1), FamilyLock, -1, true},
		// Not contenders: no marker, or not a sequence after it.
		{"leases", "", 0, false},
		{"locks", "", 0, false},
		{"_c_0f1e2d3c-4b5a-4697-8877-665544332211-lease-0000000003", "", 0, false},
		{"lease_holder", "", 0, false},
		{"config-lock-", "", 0, false},
		{"x-lock-abc", "", 0, false},
		{"x-lock-0000000001.bak", "", 0, false},
		{"x__lock__", "", 0, false},
		{"x__lock__99999999999", "", 0, false}, // beyond 32 bits: not ZooKeeper's
		{"x-lock-2147483648", "", 0, false},
		{"", "", 0, false},
	} {
		f, seq, ok := Contender(c.name)
		if f != c.family || seq != c.seq || ok != c.ok {
			t.Errorf("Contender(%q) = %q, %d, %v; want %q, %d, %v", c.name, f, seq, ok, c.family, c.seq, c.ok)
		}
	}
}

// A listing with every family and some children that are not lock nodes:
// the queue holds the contenders only, in sequence order, and our node is
// found by name and by GUID.
func TestSortQueueMixedFamilies(t *testing.T) {
	children := []string{
		kazooName(5), "leases", curatorName(3), kazooRName(4), gozkName(8),
		"_c_aaaa-lease-0000000001", curatorRW("__WRIT__", 6), "_c_11111111-2222-4333-8444-555555555555-lock-0000000009",
	}
	q := sortQueue(children)
	var got []string
	for _, e := range q {
		got = append(got, e.name)
	}
	want := []string{curatorName(3), kazooRName(4), kazooName(5), curatorRW("__WRIT__", 6), gozkName(8),
		"_c_11111111-2222-4333-8444-555555555555-lock-0000000009"}
	if !slices.Equal(got, want) {
		t.Fatalf("queue\n got %q\nwant %q", got, want)
	}
	if i := position(q, "", "11111111-2222-4333-8444-555555555555"); i != 5 {
		t.Fatalf("position by GUID = %d, want 5", i)
	}
	if i := position(q, kazooName(5), ""); i != 2 {
		t.Fatalf("position of the kazoo node = %d, want 2", i)
	}
}

// peerOrders are the orders the other clients put a lock path's contenders
// in, written from their documented behaviour: Curator and kazoo compare
// the text of the sequence suffix, go-zookeeper's zk.Lock the parsed
// number.
var peerOrders = map[string]func(a, b int32) bool{
	"curator/kazoo (text)": func(a, b int32) bool { return fmt.Sprintf("%010d", a) < fmt.Sprintf("%010d", b) },
	"zk.Lock (number)":     func(a, b int32) bool { return a < b },
}

// Across the 32-bit wrap, with a queue of every family: whenever a node is
// created, tierlock's order puts it behind every node that already exists,
// so tierlock never takes the lock while an older contender exists. Each
// peer's order puts some new node ahead of an older one (this is why no
// order could agree with all of them, and why tierlock keeps issue order
// on mixed paths too; see SequenceBefore).
func TestWrapOrderMixedPath(t *testing.T) {
	makers := []func(int32) string{curatorName, kazooName, gozkName, kazooRName}
	const first = int32(2147483647 - 5)
	var issued []string
	jumped := map[string]bool{}
	for k := range int32(12) { // 2147483642 ... 2147483647, -2147483648 ... -2147483643
		seq := int32(uint32(first) + uint32(k))
		name := makers[int(k)%len(makers)](seq)
		issued = append(issued, name)
		q := sortQueue(issued)
		if q[len(q)-1].name != name {
			t.Fatalf("after creating %s the queue is %v: the new node is not last", name, q)
		}
		for i, e := range q {
			if e.name != issued[i] {
				t.Fatalf("queue %v is not in issue order %v", q, issued)
			}
		}
		for peer, before := range peerOrders {
			for _, old := range issued[:len(issued)-1] {
				_, so, _ := Contender(old)
				if before(seq, so) {
					jumped[peer] = true
				}
			}
		}
	}
	for peer := range peerOrders {
		if !jumped[peer] {
			t.Errorf("%s never put a new node ahead of an older one across the wrap; SequenceBefore's doc says it does", peer)
		}
	}
}

func FuzzContender(f *testing.F) {
	for _, s := range []string{curatorName(1), kazooName(-2147483648), kazooRName(2147483647),
		curatorRW("__READ__", 3), "leases", "-lock-", "__rlock__-0000000001", "a-lock-__lock__5", "x-lock-+5"} {
		f.Add(s, int32(0), uint8(0))
	}
	f.Fuzz(func(t *testing.T, s string, n int32, which uint8) {
		// Any name: no panic, and what parses is a family's marker followed
		// by the parsed number up to the end.
		if fam, seq, ok := Contender(s); ok {
			var marker string
			for _, f := range families {
				if f.family == fam {
					marker = f.marker
				}
			}
			i := strings.LastIndex(s, marker)
			if marker == "" || i < 0 {
				t.Fatalf("Contender(%q) = %q without its marker", s, fam)
			}
			if v, err := strconv.ParseInt(s[i+len(marker):], 10, 32); err != nil || int32(v) != seq {
				t.Fatalf("Contender(%q) = %d; the suffix after %q says %d (%v)", s, seq, marker, v, err)
			}
		}
		// A name made by a family's client round-trips, whatever precedes.
		f := families[int(which)%len(families)]
		name := strings.ReplaceAll(s, "/", "") + f.marker + fmt.Sprintf("%010d", n)
		fam, seq, ok := Contender(name)
		if !ok || seq != n {
			t.Fatalf("Contender(%q) = %q, %d, %v; want %d", name, fam, seq, ok, n)
		}
		if fam != f.family {
			// Only when s ends so that another marker ends where this one
			// does, which no client's prefix does.
			if !strings.HasSuffix(strings.TrimSuffix(name, fmt.Sprintf("%010d", n)), markerOf(fam)) {
				t.Fatalf("Contender(%q) = %q, want %q", name, fam, f.family)
			}
		}
	})
}

func markerOf(fam Family) string {
	for _, f := range families {
		if f.family == fam {
			return f.marker
		}
	}
	return ""
}

package zklock_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tierlock/tierlock/zklock"
)

// The fuzz targets need no ZooKeeper (TestMain starts one anyway). Their
// seed corpora live in testdata/fuzz/<FuzzName>/, so a plain `go test`
// runs every seed, wrap-around cases included; explore further with e.g.
//
//	go test -run '^$' -fuzz FuzzParseSequence -fuzztime 30s ./zklock

// segmentOK is the rule for one path segment, written independently of
// the package: not empty, not "." or "..", valid UTF-8, and none of the
// code points ZooKeeper's PathUtils refuses (NUL, C0 and C1 controls,
// U+D800..U+F8FF, U+FFF0 and above: Java stores those as surrogates) nor a slash.
func segmentOK(seg string) bool {
	if seg == "" || seg == "." || seg == ".." || !utf8.ValidString(seg) {
		return false
	}
	for i := 0; i < len(seg); {
		r, size := utf8.DecodeRuneInString(seg[i:])
		i += size
		switch {
		case r == '/', r <= 0x1f, r >= 0x7f && r <= 0x9f,
			r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0:
			return false
		}
	}
	return true
}

// pathOK is the rule for a lock path: absolute, not the root, no trailing
// slash, not ZooKeeper's own /zookeeper subtree, every segment valid.
func pathOK(p string) bool {
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' {
		return false
	}
	rest := p[1:]
	if rest == "zookeeper" || strings.HasPrefix(rest, "zookeeper/") {
		return false
	}
	for rest != "" {
		seg, tail, more := strings.Cut(rest, "/")
		if !segmentOK(seg) {
			return false
		}
		if !more {
			break
		}
		rest = tail
	}
	return true
}

func FuzzValidatePath(f *testing.F) {
	f.Fuzz(func(t *testing.T, p string) {
		err := zklock.ValidatePath(p)
		if err != nil && !errors.Is(err, zklock.ErrInvalidPath) {
			t.Fatalf("ValidatePath(%q) = %v: not ErrInvalidPath", p, err)
		}
		if got, want := err == nil, pathOK(p); got != want {
			t.Fatalf("ValidatePath(%q) = %v; the rule says valid=%v", p, err, want)
		}
		if err != nil {
			return
		}
		// What an accepted path must be, checked once more by structure.
		if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
			t.Fatalf("accepted %q: not absolute or ends with a slash", p)
		}
		for _, seg := range strings.Split(p[1:], "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("accepted %q with segment %q", p, seg)
			}
			// Every segment of a valid path is a valid key.
			if err := zklock.ValidateKey(seg); err != nil {
				t.Fatalf("accepted %q but its segment %q is not a valid key: %v", p, seg, err)
			}
		}
	})
}

func FuzzValidateKey(f *testing.F) {
	f.Fuzz(func(t *testing.T, key string) {
		err := zklock.ValidateKey(key)
		if err != nil && !errors.Is(err, zklock.ErrInvalidPath) {
			t.Fatalf("ValidateKey(%q) = %v: not ErrInvalidPath", key, err)
		}
		if got, want := err == nil, segmentOK(key); got != want {
			t.Fatalf("ValidateKey(%q) = %v; the rule says valid=%v", key, err, want)
		}
		if strings.Contains(key, "/") {
			if err == nil {
				t.Fatalf("accepted key %q with a slash", key)
			}
			return
		}
		// A slash-free key is valid exactly when root/key is a valid path
		// (what Registry builds).
		if perr := zklock.ValidatePath("/locks/" + key); (perr == nil) != (err == nil) {
			t.Fatalf("ValidateKey(%q) = %v but ValidatePath(/locks/%s) = %v", key, err, key, perr)
		}
	})
}

// lockName builds a node name as ZooKeeper would name a Curator protected
// node: _c_<uuid>-lock-<seq as %010d>.
func lockName(uuid string, seq int32) string {
	return "_c_" + uuid + "-lock-" + fmt.Sprintf("%010d", seq)
}

// fakeUUID formats a version-4 shaped UUID from two numbers.
func fakeUUID(hi, lo uint64) string {
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x",
		uint32(hi>>32), uint16(hi>>16), uint16(hi)&0xfff, 0x8000|uint16(lo>>48)&0x3fff, lo&0xffffffffffff)
}

func FuzzParseSequence(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string, n int32, hi, lo uint64) {
		// Arbitrary names never panic, and what parses is the decimal
		// after the last "-lock-", within int32.
		if v, ok := zklock.ParseSequence(s); ok {
			i := strings.LastIndex(s, "-lock-")
			if i < 0 {
				t.Fatalf("ParseSequence(%q) = %d without a -lock- marker", s, v)
			}
			w, err := strconv.ParseInt(s[i+len("-lock-"):], 10, 64)
			if err != nil || w != int64(v) {
				t.Fatalf("ParseSequence(%q) = %d; suffix says %d (%v)", s, v, w, err)
			}
		}
		// Round trip of a well-formed name.
		name := lockName(fakeUUID(hi, lo), n)
		if v, ok := zklock.ParseSequence(name); !ok || v != n {
			t.Fatalf("ParseSequence(%q) = %d, %v; want %d", name, v, ok, n)
		}
		// Only the part after the last marker counts, whatever precedes it.
		name = "_c_" + s + "-lock-" + fmt.Sprintf("%010d", n)
		if v, ok := zklock.ParseSequence(name); !ok || v != n {
			t.Fatalf("ParseSequence(%q) = %d, %v; want %d", name, v, ok, n)
		}
	})
}

// maxOffset bounds offsets so that j-i < 2^31: the span within which
// serial-number order is defined.
const maxOffset = 1<<31 - 1

func FuzzSequenceOrder(f *testing.F) {
	f.Fuzz(func(t *testing.T, base int32, i, j uint32) {
		i, j = i%maxOffset, j%maxOffset
		if i == j {
			if zklock.SequenceBefore(base, base) {
				t.Fatalf("SequenceBefore(%d, %d) is true", base, base)
			}
			return
		}
		if i > j {
			i, j = j, i
		}
		// The server's counter is a signed 32-bit integer: b+i and b+j
		// wrap from 2147483647 to -2147483648.
		a := int32(uint32(base) + i)
		b := int32(uint32(base) + j)
		if !zklock.SequenceBefore(a, b) {
			t.Fatalf("SequenceBefore(%d, %d) = false: %d was issued %d creates earlier", a, b, a, j-i)
		}
		if zklock.SequenceBefore(b, a) {
			t.Fatalf("SequenceBefore(%d, %d) = true: both orders hold", b, a)
		}
		// The same order through node names, as the queue sees them.
		na, nb := lockName(fakeUUID(uint64(i), 1), a), lockName(fakeUUID(uint64(j), 2), b)
		sa, oka := zklock.ParseSequence(na)
		sb, okb := zklock.ParseSequence(nb)
		if !oka || !okb || !zklock.SequenceBefore(sa, sb) {
			t.Fatalf("names %q, %q: parsed %d (%v), %d (%v), not in issue order", na, nb, sa, oka, sb, okb)
		}
	})
}

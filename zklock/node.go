package zklock

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Node names follow Curator's protected form, _c_<uuid>-lock-<seq>, so that
// Curator's InterProcessMutex, kazoo's Lock and go-zookeeper's zk.Lock
// queue on the same path with us.
const (
	protectedPrefix = "_c_"
	lockMarker      = "-lock-"
)

// ValidatePath checks a lock path: absolute, no trailing slash, no empty,
// "." or ".." segment, none of the characters ZooKeeper refuses (control
// characters, U+D800 to U+F8FF, U+FFF0 and above), not under /zookeeper.
func ValidatePath(path string) error {
	switch {
	case path == "" || path[0] != '/':
		return fmt.Errorf("%w: %q must be absolute", ErrInvalidPath, path)
	case path == "/":
		return fmt.Errorf("%w: the root cannot be a lock", ErrInvalidPath)
	case strings.HasSuffix(path, "/"):
		return fmt.Errorf("%w: %q ends with a slash", ErrInvalidPath, path)
	case path == "/zookeeper" || strings.HasPrefix(path, "/zookeeper/"):
		return fmt.Errorf("%w: %q is reserved by ZooKeeper", ErrInvalidPath, path)
	}
	for _, seg := range strings.Split(path[1:], "/") {
		if err := validSegment(seg); err != nil {
			return fmt.Errorf("%w: %q: %v", ErrInvalidPath, path, err)
		}
	}
	return nil
}

// ValidateKey checks that key can be one path segment below a lock root.
func ValidateKey(key string) error {
	if err := validSegment(key); err != nil {
		return fmt.Errorf("%w: key %q: %v", ErrInvalidPath, key, err)
	}
	return nil
}

func validSegment(seg string) error {
	switch seg {
	case "":
		return fmt.Errorf("empty segment")
	case ".", "..":
		return fmt.Errorf("relative segment %q", seg)
	}
	for _, r := range seg {
		// ZooKeeper rejects these code points in paths (PathUtils). Java
		// holds code points above U+FFFF as surrogate pairs, which it
		// rejects too.
		if r == '/' || r == 0 || unicode.IsControl(r) || r == unicode.ReplacementChar ||
			(r >= 0xd800 && r <= 0xf8ff) || r >= 0xfff0 {
			return fmt.Errorf("character %q not allowed", r)
		}
	}
	return nil
}

// newGUID returns a random (version 4) UUID in its canonical 36-character
// form with dashes, as Curator writes it.
func newGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// nodePrefix is the name we create under the lock path; the server appends
// a 10-digit sequence number.
func nodePrefix(guid string) string { return protectedPrefix + guid + lockMarker }

// ParseSequence returns the sequence number of a lock node name: the
// integer after the last "-lock-". ZooKeeper's counter is a signed 32-bit
// integer formatted as %010d, so after 2^31 creates under one parent it
// continues at -2147483648.
func ParseSequence(name string) (int32, bool) {
	i := strings.LastIndex(name, lockMarker)
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[i+len(lockMarker):], 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// SequenceBefore reports whether sequence a was issued before b. It uses
// serial-number arithmetic (RFC 1982) on the 32-bit counter: a precedes b
// when b-a, computed with wrap-around, is positive. This keeps the order of
// a live queue across the wrap from 2147483647 to -2147483648, provided
// its nodes span fewer than 2^31 sequence numbers (always the case: a
// queue that long would not fit in any server).
func SequenceBefore(a, b int32) bool { return int32(uint32(b)-uint32(a)) > 0 }

type entry struct {
	name string
	seq  int32
}

// sortQueue keeps the lock nodes among children (names without "-lock-"
// and a number are ignored) and orders them by sequence only.
func sortQueue(children []string) []entry {
	q := make([]entry, 0, len(children))
	for _, c := range children {
		if seq, ok := ParseSequence(c); ok {
			q = append(q, entry{c, seq})
		}
	}
	slices.SortFunc(q, func(a, b entry) int {
		switch {
		case a.seq == b.seq:
			return strings.Compare(a.name, b.name)
		case SequenceBefore(a.seq, b.seq):
			return -1
		default:
			return 1
		}
	})
	return q
}

// position finds our node in the queue: the node named name, or, when name
// is empty (the create's reply was lost), the node carrying our GUID.
func position(q []entry, name, guid string) int {
	for i, e := range q {
		if name != "" && e.name == name {
			return i
		}
		if name == "" && strings.HasPrefix(e.name, protectedPrefix+guid) {
			return i
		}
	}
	return -1
}

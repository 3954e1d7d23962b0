package zklock

import (
	"fmt"
	"strings"
	"unicode"
)

// What a lock path may be, checked before anything is sent: bad input gets
// ErrInvalidPath and sends nothing (New, the recipes, tier's keys).

// Size limits. A request larger than the server's jute.maxbuffer (1 MB by
// default) makes it drop the connection, and one larger than go-zookeeper's
// buffer (1.5 MB) fails with zk.ErrShortBuffer: refused before anything is
// sent, an oversized path or data can neither take the session (and every
// hold on it) down nor be retried for ever. The bounds leave room for a
// multi transaction's two paths, the data and the ACL.
const (
	maxPathLen = 4096     // bytes of a lock path, the lock node's name included
	maxDataLen = 64 << 10 // bytes of a lock node's data
)

// ValidatePath checks a lock path: absolute, no trailing slash, no empty,
// "." or ".." segment, none of the characters ZooKeeper refuses (control
// characters, U+D800 to U+F8FF, U+FFF0 and above), not under /zookeeper,
// and at most 4000 bytes long (with the lock node's name, 4 KiB).
func ValidatePath(path string) error {
	switch {
	case len(path) > maxPathLen-96:
		return fmt.Errorf("%w: %d bytes long: at most %d", ErrInvalidPath, len(path), maxPathLen-96)
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

// ValidateKey checks that key can be one path segment below a lock root
// (the whole path is then checked by ValidatePath).
func ValidateKey(key string) error {
	if len(key) > maxPathLen {
		return fmt.Errorf("%w: key of %d bytes: at most %d with its root", ErrInvalidPath, len(key), maxPathLen-96)
	}
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

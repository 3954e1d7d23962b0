package memzk

import (
	"net"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// fixACL is the server's check of an ACL given with a create or SetACL:
// duplicates dropped, and zk.ErrInvalidACL for an empty list or an entry
// the server cannot use. world must name anyone; digest and ip ids must
// be well formed; auth would stand for the session's credentials, and
// the double's sessions have none, as a client that never called AddAuth.
func fixACL(acl []zk.ACL) ([]zk.ACL, error) {
	out := make([]zk.ACL, 0, len(acl))
	for _, a := range acl {
		if !validID(a.Scheme, a.ID) {
			return nil, zk.ErrInvalidACL
		}
		if !containsACL(out, a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, zk.ErrInvalidACL
	}
	return out, nil
}

func containsACL(acl []zk.ACL, a zk.ACL) bool {
	for _, b := range acl {
		if b == a {
			return true
		}
	}
	return false
}

func validID(scheme, id string) bool {
	switch scheme {
	case "world":
		return id == "anyone"
	case "digest":
		// The server splits on ':' as Java's String.split does, dropping
		// trailing empty parts, and wants two: user and hash.
		return len(strings.Split(strings.TrimRight(id, ":"), ":")) == 2
	case "ip":
		return validIP(id)
	}
	return false
}

func validIP(id string) bool {
	addr, bits, masked := strings.Cut(id, "/")
	ip := net.ParseIP(addr)
	if ip == nil {
		return false
	}
	if !masked {
		return true
	}
	n, err := strconv.Atoi(bits)
	size := 8 * len(ip)
	if ip.To4() != nil && !strings.Contains(addr, ":") {
		size = 32
	}
	return err == nil && n >= 0 && n <= size
}

// allows reports whether acl grants perm to the double's sessions: only a
// world:anyone entry can, as they hold no credentials.
func allows(acl []zk.ACL, perm int32) bool {
	for _, a := range acl {
		if a.Perms&perm != 0 && a.Scheme == "world" && a.ID == "anyone" {
			return true
		}
	}
	return false
}

// clientPath is go-zookeeper's check of a path before it sends a single
// request (zk.ErrInvalidPath when it fails); seq lets a sequential
// create's path end in '/'.
func clientPath(path string, seq bool) bool {
	return validPath(path, seq, clientForbids)
}

// serverPath is the server's check (zk.ErrBadArguments when it fails), of
// a create's path once its suffix is added, and of a set's, a check's and
// a SetACL's path.
func serverPath(path string) bool {
	return validPath(path, false, serverForbids)
}

// validPath checks the rules client and server share: absolute, no empty
// name, no "." or ".." name, no trailing '/' (unless seq), none of the
// characters forbids names (nor NUL).
func validPath(path string, seq bool, forbids func(rune) bool) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	if path == "/" {
		return true
	}
	names := strings.Split(path[1:], "/")
	for i, name := range names {
		last := i == len(names)-1
		switch {
		case name == "" && !(last && seq), name == ".", name == "..":
			return false
		case strings.IndexFunc(name, forbids) >= 0:
			return false
		}
	}
	return true
}

// clientForbids and serverForbids are the characters go-zookeeper's
// validatePath and the server's PathUtils refuse. They differ: U+E000 to
// U+EFFF and characters beyond U+FFFF (surrogate pairs in the server's
// Java strings) pass the client and not the server. A Go string that is
// not UTF-8 reads as U+FFFD, which both refuse.
func clientForbids(r rune) bool {
	return r <= 0x1f || r >= 0x7f && r <= 0x9f || r >= 0xf000 && r <= 0xf8ff || r >= 0xfff0 && r < 0xffff
}

func serverForbids(r rune) bool {
	return r <= 0x1f || r >= 0x7f && r <= 0x9f || r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0
}

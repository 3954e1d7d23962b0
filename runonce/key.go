package runonce

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"
)

// MaxKeyLen is the longest job key, in bytes, that Claim accepts.
const MaxKeyLen = 1024

// nodeName returns the path segment that names the job key below the
// Runner's root: key, escaped as a URL path segment (so "/" and bytes
// ZooKeeper refuses become %XX), with "." and ".." spelled %2E. The
// mapping is one to one.
func nodeName(key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if len(key) > MaxKeyLen {
		return "", fmt.Errorf("%w: key of %d bytes, at most %d", ErrInvalidKey, len(key), MaxKeyLen)
	}
	seg := url.PathEscape(key)
	switch seg {
	case ".":
		seg = "%2E"
	case "..":
		seg = "%2E%2E"
	}
	return seg, nil
}

// ms returns d in whole milliseconds, at least 1.
func ms(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}

// instanceName is host:pid, written into run records.
func instanceName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

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

// The names below a job's node (root/<job>): the lock's path and the run
// node.
const (
	lockName = "lock"
	runName  = "run"
)

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

// msDuration is ms milliseconds.
func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// tickString formats a tick's name (ms).
func tickString(name int64) string { return time.UnixMilli(name).UTC().Format(time.RFC3339Nano) }

// instanceName is host:pid, written into run records.
func instanceName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

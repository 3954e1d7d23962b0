package gocronlock

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"
)

// MaxKeyLen is the longest job name, in bytes, that Locker.Lock accepts.
const MaxKeyLen = 1024

// record is the data of a job's run node, written by every attempt while
// it holds the job's lock, before it knows the server time of its own
// write. The node's mtime is that time. Whether the attempt ran is not
// stored: it follows from the record and the mtime (see lastRun), so one
// write per attempt is enough.
type record struct {
	// Last is the server time, in ms since the epoch, of the last run
	// before this write.
	Last int64 `json:"last"`
	// Window is the writer's window, in ms.
	Window int64 `json:"window_ms"`
	// By names the writer, for operators: host:pid.
	By string `json:"by,omitempty"`
}

// encode returns r as the run node's data.
func (r record) encode() []byte {
	b, _ := json.Marshal(r) // a struct of ints and a string cannot fail
	return b
}

// ran reports whether an attempt whose write got server time now (ms)
// runs, the last run having started at last, under a window of w ms: when
// at least w has passed. A server clock that went back by more than w (a
// new ensemble leader with a slower clock, a reset clock) also lets it
// run, rather than skipping every tick until the clock catches up.
func ran(now, last, w int64) bool {
	elapsed := now - last
	return elapsed >= w || elapsed < -w
}

// lastRun returns the server time (ms) of the last run, from the run
// node's data and mtime: the write that made them ran if ran says so of
// it, with the window it was written with. Data that cannot be read is
// taken for a run at mtime, which can skip a tick but never repeat one.
func lastRun(data []byte, mtime int64) int64 {
	var r record
	if err := json.Unmarshal(data, &r); err != nil || r.Window <= 0 {
		return mtime
	}
	if ran(mtime, r.Last, r.Window) {
		return mtime
	}
	return r.Last
}

// nodeName returns the path segment that names the job key below the
// Locker's root: key, escaped as a URL path segment (so "/" and bytes
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

// instanceName is host:pid, written into run records and candidates.
func instanceName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

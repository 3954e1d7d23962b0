package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// EnvDir is the environment variable that turns recording on in a build
// with the tierlocktrace tag: each process writes its steps to
// $TIERLOCK_TRACE/trace-<pid>.jsonl.
const EnvDir = "TIERLOCK_TRACE"

// Recorder appends steps, one JSON object a line, to a writer. Each step
// is written (and flushed) as it is recorded, so that a process killed
// mid-run leaves every step it took. Its methods are safe for concurrent
// use; the file's order is the order in which the steps were recorded.
type Recorder struct {
	mu    sync.Mutex
	w     *bufio.Writer
	c     io.Closer // nil when the writer is not ours
	name  string    // the file's name (Create's), or ""
	enc   *json.Encoder
	start time.Time
	pid   int
	seq   uint64
	// procs numbers the processes of the model by what records their
	// steps: a connection (*zk.Conn), or the wire it was dialed through
	// (zklock's tap, bound to its connection by Bind).
	procs  map[any]int
	nprocs int
	conns  map[any]*zk.Conn // a wire's connection, once bound
	err    error
}

// NewRecorder returns a recorder writing to w.
func NewRecorder(w io.Writer) *Recorder {
	bw := bufio.NewWriter(w)
	return &Recorder{w: bw, enc: json.NewEncoder(bw), start: time.Now(), pid: os.Getpid(),
		procs: make(map[any]int), conns: make(map[any]*zk.Conn)}
}

// Create returns a recorder writing to dir/trace-<pid>.jsonl, which it
// creates (with dir, if missing); Close closes the file.
func Create(dir string) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	f, err := os.Create(FileName(dir, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	r := NewRecorder(f)
	r.c, r.name = f, f.Name()
	return r, nil
}

// FileName is the trace file of process pid under dir.
func FileName(dir string, pid int) string {
	return filepath.Join(dir, fmt.Sprintf("trace-%d.jsonl", pid))
}

// Record completes s (sequence number, time, pid, and the process and
// session of c when c is not nil) and writes it.
func (r *Recorder) Record(c *zk.Conn, s Step) {
	var key any
	if c != nil {
		key = c
	}
	r.record(key, c, s)
}

// RecordWire completes s as Record does, for a step of the wire w (a
// connection's tap): its process is the connection's w is bound to
// (Bind), or, before that, one of its own that the binding gives the
// connection.
func (r *Recorder) RecordWire(w any, s Step) { r.record(w, nil, s) }

// Bind makes the steps of wire w and of connection c one process's: c's
// steps go under the number w's steps were given, if any, and w's under
// c's from now on.
func (r *Recorder) Bind(c *zk.Conn, w any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pc, okc := r.procs[c]
	pw, okw := r.procs[w]
	switch {
	case okc && okw:
	case okw:
		r.procs[c] = pw
	case okc:
		r.procs[w] = pc
	default:
		r.nprocs++
		r.procs[c], r.procs[w] = r.nprocs, r.nprocs
	}
	r.conns[w] = c
}

func (r *Recorder) record(key any, c *zk.Conn, s Step) {
	now := time.Now()
	var sid int64
	if c != nil {
		sid = c.SessionID() // atomic: safe under any of the caller's locks
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	if bc := r.conns[key]; c == nil && key != nil && bc != nil {
		sid = bc.SessionID() // a wire's step: its connection's session (atomic)
	}
	r.seq++
	s.Seq, s.T, s.Pid = r.seq, now.Sub(r.start).Nanoseconds(), r.pid
	if r.seq == 1 {
		s.Wall = r.start.UnixNano() // the clock's origin, for merging the files of several processes
	}
	if key != nil {
		p, ok := r.procs[key]
		if !ok {
			r.nprocs++
			p = r.nprocs
			r.procs[key] = p
		}
		s.Proc, s.Sid = p, sid
	}
	if err := r.enc.Encode(s); err != nil {
		r.err = err
		return
	}
	r.err = r.w.Flush()
}

// Since returns t on the recorder's clock (nanoseconds since it started;
// monotonic when t carries a monotonic reading), or 0 for the zero time.
func (r *Recorder) Since(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Sub(r.start).Nanoseconds()
}

// FileName returns the name of the file the recorder writes (Create's),
// or "".
func (r *Recorder) FileName() string { return r.name }

// Pid returns the id of the process whose steps the recorder writes.
func (r *Recorder) Pid() int { return r.pid }

// Err returns the first write error, which stopped the recording.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close flushes the recorder and closes its file (Create's); later steps
// are dropped.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.w.Flush()
	if r.c != nil {
		if cerr := r.c.Close(); err == nil {
			err = cerr
		}
		r.c = nil
	}
	if r.err == nil {
		r.err = os.ErrClosed
	}
	return err
}

// ReadFile reads the steps of a trace file, in order.
func ReadFile(name string) ([]Step, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}

// Read reads the steps of a trace, one JSON object a line.
func Read(rd io.Reader) ([]Step, error) {
	var steps []Step
	dec := json.NewDecoder(rd)
	for {
		var s Step
		err := dec.Decode(&s)
		if err == io.EOF {
			return steps, nil
		}
		if err != nil {
			return steps, fmt.Errorf("trace: step %d: %w", len(steps)+1, err)
		}
		steps = append(steps, s)
	}
}

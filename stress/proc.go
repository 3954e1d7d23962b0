package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// workerProc is the parent's handle on one worker process.
type workerProc struct {
	idx    int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tail
	exited chan struct{} // closed when stdout reached EOF and the process was reaped
	err    error         // the process's exit error, once exited is closed
}

// procMsg is a message from worker proc; eof reports that the worker's
// stdout closed (it exited or crashed).
type procMsg struct {
	proc int
	msg  message
	eof  bool
}

// startWorker re-executes this binary as worker spec.Proc. Its messages
// arrive on msgs; its stderr is kept (its end is shown if it fails) and,
// when passthrough is not nil, copied there.
func startWorker(exe string, spec workerSpec, msgs chan<- procMsg, passthrough io.Writer) (*workerProc, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), workerEnv+"="+string(b))
	setProcAttrs(cmd)
	w := &workerProc{idx: spec.Proc, cmd: cmd, stderr: &tail{max: 8 << 10}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	if passthrough != nil {
		cmd.Stderr = io.MultiWriter(w.stderr, passthrough)
	}
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker %d: %w", spec.Proc, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			var m message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				// Not ours (something printed on stdout): keep it for errors.
				fmt.Fprintf(w.stderr, "stdout: %s\n", sc.Bytes())
				continue
			}
			msgs <- procMsg{proc: w.idx, msg: m}
		}
		_, _ = io.Copy(io.Discard, stdout)
		w.err = cmd.Wait()
		close(w.exited)
		msgs <- procMsg{proc: w.idx, eof: true}
	}()
	return w, nil
}

// send writes a command to the worker; a worker that is gone is ignored
// (its end is reported through its messages).
func (w *workerProc) send(cmd string) {
	_, _ = io.WriteString(w.stdin, cmd+"\n")
}

// kill stops the worker at once.
func (w *workerProc) kill() {
	select {
	case <-w.exited:
	default:
		_ = w.cmd.Process.Kill()
	}
}

// describe explains how a worker ended, with the end of its stderr.
func (w *workerProc) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "worker %d", w.idx)
	select {
	case <-w.exited:
		if w.err != nil {
			fmt.Fprintf(&b, " exited: %v", w.err)
		} else {
			b.WriteString(" exited")
		}
	default:
		b.WriteString(" is still running")
	}
	if s := strings.TrimSpace(w.stderr.String()); s != "" {
		b.WriteString("; its last output:\n    " + strings.ReplaceAll(s, "\n", "\n    "))
	}
	return b.String()
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

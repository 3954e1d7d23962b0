package child

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

// Spec says how to start a child.
type Spec struct {
	// Role names the function the child runs (see [Dispatch]).
	Role string
	// Task is what the child is to do; it reaches the child as JSON (see
	// [Task]).
	Task any
	// Exe is the binary to run; "" is the current one.
	Exe string
	// Args are the child's arguments: "-test.run=^$" for a test binary, in
	// case its TestMain does not dispatch before parsing flags.
	Args []string
	// Stderr, if not nil, receives a copy of the child's stderr.
	Stderr io.Writer
}

// Proc is a running (or ended) child.
type Proc struct {
	spec   Spec
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	output *tail
	lines  chan []byte
	exited chan struct{} // closed once stdout reached EOF and the process was reaped
	err    error         // the exit error, once exited is closed
}

// tailSize is how much of a child's stderr Describe shows.
const tailSize = 8 << 10

// Start starts a child as spec says.
func Start(spec Spec) (*Proc, error) {
	task, err := json.Marshal(spec.Task)
	if err != nil {
		return nil, fmt.Errorf("child: task: %w", err)
	}
	exe := spec.Exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			exe = os.Args[0]
		}
	}
	cmd := exec.Command(exe, spec.Args...)
	cmd.Env = environ(spec.Role, task)
	setProcAttrs(cmd)
	p := &Proc{spec: spec, cmd: cmd, output: &tail{max: tailSize}, lines: make(chan []byte, 16), exited: make(chan struct{})}
	cmd.Stderr = p.output
	if spec.Stderr != nil {
		cmd.Stderr = io.MultiWriter(p.output, spec.Stderr)
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("child: start %s: %w", spec.Role, err)
	}
	go p.read(stdout)
	return p, nil
}

// read passes the child's stdout on line by line, then reaps it.
func (p *Proc) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		p.lines <- append([]byte(nil), sc.Bytes()...)
	}
	_, _ = io.Copy(io.Discard, stdout)
	p.err = p.cmd.Wait()
	close(p.exited)
	close(p.lines)
}

// Pid is the child's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Lines delivers the child's stdout, one line at a time without its
// newline; it is closed once the child has exited and been reaped. The
// child blocks on its stdout when nobody reads it.
func (p *Proc) Lines() <-chan []byte { return p.lines }

// Send writes line and a newline to the child's stdin. A child that is
// gone is not an error: its end shows on Lines.
func (p *Proc) Send(line string) {
	_, _ = io.WriteString(p.stdin, line+"\n")
}

// CloseStdin closes the child's stdin: it reads EOF.
func (p *Proc) CloseStdin() error { return p.stdin.Close() }

// Kill sends SIGKILL to the child, unless it already exited.
func (p *Proc) Kill() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
	}
}

// Exited is closed once the child exited and was reaped (and Lines was
// read to its end).
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err is how the child ended (nil: exit status 0); call it once Exited is
// closed.
func (p *Proc) Err() error { return p.err }

// Wait discards the lines nobody read, waits for the child to end and
// returns how it ended.
func (p *Proc) Wait() error {
	for range p.lines {
	}
	<-p.exited
	return p.err
}

// Replace kills the child if it still runs, waits for it, and starts
// another with the same spec and the given task.
func (p *Proc) Replace(task any) (*Proc, error) {
	p.Kill()
	_ = p.Wait()
	spec := p.spec
	spec.Task = task
	return Start(spec)
}

// Note adds a line to the output that Describe shows, such as a stray line
// of the child's stdout.
func (p *Proc) Note(line string) { _, _ = fmt.Fprintln(p.output, line) }

// Output returns the end of the child's stderr (and notes).
func (p *Proc) Output() string { return p.output.String() }

// Describe says how the child ended, or that it still runs, with the end
// of its stderr, for an error message.
func (p *Proc) Describe(name string) string {
	var b strings.Builder
	b.WriteString(name)
	select {
	case <-p.exited:
		if p.err != nil {
			fmt.Fprintf(&b, " exited: %v", p.err)
		} else {
			b.WriteString(" exited")
		}
	default:
		b.WriteString(" is still running")
	}
	if s := strings.TrimSpace(p.output.String()); s != "" {
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

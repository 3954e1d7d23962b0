package peers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Proc is a peer process in serve mode: threads of its own, each with its
// own lock per path, driven from Go.
type Proc struct {
	kind    Kind
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	wmu     sync.Mutex
	stderr  *tailBuffer
	threads []thread
	exited  chan struct{}
	waitErr error
	notices chan Notice
}

// Notice is what a Curator peer started with CuratorRevocable reports of
// its own accord about a revocation of thread Thread's lock on path index
// Path.
type Notice struct {
	// Kind is "revoked" (the revocation listener fired), then "released"
	// (the thread released the path on it) or "idle" (it held nothing).
	Kind   string
	Thread int
	Path   int
}

// noticeKinds maps the peer's report letters to Notice kinds.
var noticeKinds = map[string]string{"V": "revoked", "Y": "released", "N": "idle"}

type thread struct {
	mu      sync.Mutex // one request at a time
	replies chan string
}

// ErrExited is returned by calls on a peer process that has ended.
var ErrExited = errors.New("peers: peer process exited")

// Serve starts kind in serve mode with threads threads and one lock per
// path for each, connected to servers with the given session timeout, and
// waits until it is connected. flags are peer options such as
// KazooNoExtra. Close ends it.
func Serve(ctx context.Context, kind Kind, cacheDir string, servers []string, sessionTimeout time.Duration,
	threads int, paths []string, flags ...string) (*Proc, error) {
	if threads <= 0 || len(paths) == 0 {
		return nil, fmt.Errorf("peers: %d threads, %d paths", threads, len(paths))
	}
	args := append(append([]string{}, flags...), "serve", strings.Join(servers, ","),
		strconv.FormatInt(sessionTimeout.Milliseconds(), 10), strconv.Itoa(threads))
	args = append(args, paths...)
	// The process must outlive ctx, which only bounds the start.
	cmd, err := Command(context.WithoutCancel(ctx), kind, cacheDir, args...)
	if err != nil {
		return nil, err
	}
	p := &Proc{kind: kind, cmd: cmd, stderr: &tailBuffer{max: 8 << 10}, threads: make([]thread, threads), exited: make(chan struct{}),
		notices: make(chan Notice, 64)}
	for i := range p.threads {
		p.threads[i].replies = make(chan string, 1)
	}
	cmd.Stderr = p.stderr
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("peers: start %s: %w", kind, err)
	}
	ready := make(chan struct{})
	go p.read(stdout, ready)
	select {
	case <-ready:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("peers: %s exited before it was ready: %v: %s", kind, p.waitErr, p.stderr)
	case <-ctx.Done():
		p.Close()
		return nil, fmt.Errorf("peers: %s not ready: %w: %s", kind, ctx.Err(), p.stderr)
	}
}

// read dispatches the peer's answers to the threads' channels.
func (p *Proc) read(stdout io.Reader, ready chan struct{}) {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if line == "ready" {
			close(ready)
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		t, err := strconv.Atoi(f[1])
		if err != nil || t < 0 || t >= len(p.threads) {
			continue
		}
		if kind, ok := noticeKinds[f[0]]; ok && len(f) == 3 {
			if path, err := strconv.Atoi(f[2]); err == nil {
				select {
				case p.notices <- Notice{Kind: kind, Thread: t, Path: path}:
				default: // nobody reads them: drop rather than stall replies
				}
			}
			continue
		}
		p.threads[t].replies <- line
	}
	p.waitErr = p.cmd.Wait()
	close(p.exited)
}

func (p *Proc) send(line string) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, err := io.WriteString(p.stdin, line+"\n")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrExited, err)
	}
	return nil
}

func (p *Proc) await(t int) (string, error) {
	select {
	case r := <-p.threads[t].replies:
		return r, nil
	case <-p.exited:
		return "", fmt.Errorf("%w: %v: %s", ErrExited, p.waitErr, p.stderr)
	}
}

// Acquire has thread t take the lock on path index path and returns the
// sequence number of its node. If ctx ends first, Acquire returns ctx's
// error at once; the thread's acquisition cannot be withdrawn from the
// peer, so it is released in the background as soon as it completes.
func (p *Proc) Acquire(ctx context.Context, t, path int) (int64, error) {
	return p.acquire(ctx, t, path, "")
}

// AcquireRead is Acquire of the read lock of a Curator peer started with
// CuratorRW; the sequence number is -1 (Curator keeps the node to itself).
func (p *Proc) AcquireRead(ctx context.Context, t, path int) (int64, error) {
	return p.acquire(ctx, t, path, " r")
}

// AcquireWrite is Acquire of the write lock of a Curator peer started with
// CuratorRW; the sequence number is -1.
func (p *Proc) AcquireWrite(ctx context.Context, t, path int) (int64, error) {
	return p.acquire(ctx, t, path, " w")
}

// AcquirePermits is Acquire of k leases of the semaphore of a Curator peer
// started with CuratorLeases; the sequence number is -1. Release returns
// them all.
func (p *Proc) AcquirePermits(ctx context.Context, t, path, k int) (int64, error) {
	return p.acquire(ctx, t, path, " "+strconv.Itoa(k))
}

// acquire sends "A <t> <path><arg>" and awaits the hold.
func (p *Proc) acquire(ctx context.Context, t, path int, arg string) (int64, error) {
	th := &p.threads[t]
	th.mu.Lock()
	if err := p.send(fmt.Sprintf("A %d %d%s", t, path, arg)); err != nil {
		th.mu.Unlock()
		return 0, err
	}
	type res struct {
		line string
		err  error
	}
	got := make(chan res, 1)
	go func() {
		line, err := p.await(t)
		got <- res{line, err}
	}()
	select {
	case r := <-got:
		th.mu.Unlock()
		if r.err != nil {
			return 0, r.err
		}
		return parseHold(p.kind, r.line)
	case <-ctx.Done():
		go func() { // the thread is kept busy until its hold is given back
			defer th.mu.Unlock()
			if r := <-got; r.err == nil && strings.HasPrefix(r.line, "H ") && p.send(fmt.Sprintf("R %d %d", t, path)) == nil {
				_, _ = p.await(t)
			}
		}()
		return 0, ctx.Err()
	}
}

func parseHold(kind Kind, line string) (int64, error) {
	f := strings.SplitN(line, " ", 3)
	if f[0] != "H" || len(f) < 3 {
		return 0, fmt.Errorf("peers: %s: %s", kind, line)
	}
	seq, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("peers: %s: %s", kind, line)
	}
	return seq, nil
}

// Release has thread t release path index path.
func (p *Proc) Release(t, path int) error {
	th := &p.threads[t]
	th.mu.Lock()
	defer th.mu.Unlock()
	if err := p.send(fmt.Sprintf("R %d %d", t, path)); err != nil {
		return err
	}
	line, err := p.await(t)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "U ") {
		return fmt.Errorf("peers: %s: %s", p.kind, line)
	}
	return nil
}

// Notices returns the reports of a peer started with CuratorRevocable
// (the last 64 unread are kept).
func (p *Proc) Notices() <-chan Notice { return p.notices }

// Revoke has thread t of a Curator peer call Curator's
// Revoker.attemptRevoke(client, node): a revocation request written into
// node's data.
func (p *Proc) Revoke(t int, node string) error {
	th := &p.threads[t]
	th.mu.Lock()
	defer th.mu.Unlock()
	if err := p.send(fmt.Sprintf("K %d %s", t, node)); err != nil {
		return err
	}
	line, err := p.await(t)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "K ") {
		return fmt.Errorf("peers: %s: %s", p.kind, line)
	}
	return nil
}

// Close ends the peer: it releases what its threads hold and exits when
// its stdin closes; it is killed if it has not exited within 15 seconds.
func (p *Proc) Close() error {
	p.wmu.Lock()
	_ = p.stdin.Close()
	p.wmu.Unlock()
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("peers: %s did not exit; killed: %s", p.kind, p.stderr)
	}
	if p.waitErr != nil {
		return fmt.Errorf("peers: %s: %w: %s", p.kind, p.waitErr, p.stderr)
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

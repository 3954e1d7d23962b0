package fleet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNoRedis is returned by StartRedis when redis-server is not installed
// (scripts/install-deps.sh installs it).
var ErrNoRedis = errors.New("fleet: redis-server not found on PATH (scripts/install-deps.sh installs it)")

// RedisServer is a redis-server process started by StartRedis on
// 127.0.0.1, with no persistence.
type RedisServer struct {
	Addr string

	cmd    *exec.Cmd
	dir    string
	out    *tailBuffer
	exited chan struct{} // closed once the process was reaped
	once   sync.Once
}

// StartRedis starts a redis-server on 127.0.0.1 and a free port and waits
// until it answers PING. A port taken between its choice and the server's
// bind (another process on a shared machine) costs a retry.
func StartRedis(ctx context.Context) (*RedisServer, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedis
	}
	for attempt := 1; ; attempt++ {
		r, err := startRedis(ctx, path)
		if err == nil || attempt == 3 || ctx.Err() != nil {
			return r, err
		}
	}
}

func startRedis(ctx context.Context, path string) (*RedisServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fleet: free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "cronfleet-redis-")
	if err != nil {
		return nil, err
	}
	r := &RedisServer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, out: &tailBuffer{max: 4 << 10}, exited: make(chan struct{})}
	r.cmd = exec.Command(path, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", "")
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	setProcAttrs(r.cmd)
	if err := r.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("fleet: start redis-server: %w", err)
	}
	go func() {
		_ = r.cmd.Wait()
		close(r.exited)
	}()
	if err := r.await(ctx); err != nil {
		r.Close()
		return nil, fmt.Errorf("fleet: redis-server on %s: %w; its output: %s", r.Addr, err, r.out)
	}
	return r, nil
}

// await waits until the server answers PING, it exits, or ctx is done.
func (r *RedisServer) await(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if r.ping() == nil {
			return nil
		}
		select {
		case <-r.exited:
			return errors.New("exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// ping sends PING and reads PONG, on a connection of its own.
func (r *RedisServer) ping() error {
	c, err := net.DialTimeout("tcp", r.Addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// Close stops the server by its pid (SIGTERM, SIGKILL after 5 s), waits
// for it and removes its directory.
func (r *RedisServer) Close() {
	r.once.Do(func() {
		terminate(r.cmd, false)
		select {
		case <-r.exited:
		case <-time.After(5 * time.Second):
			terminate(r.cmd, true)
			<-r.exited
		}
		os.RemoveAll(r.dir)
	})
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

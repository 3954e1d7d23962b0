// Package redisserver starts a throwaway redis-server (Debian's
// /usr/bin/redis-server, on PATH) on 127.0.0.1 and a free port, with no
// persistence, for the tests and benchmarks that measure a Redis lock
// beside tierlock: cronlock's fleet test (its redsync baseline) and the
// stress command's redsync implementation. It is the one place that
// starts, watches and stops the server, so that both measure the same
// server the same way.
//
// The server is started with its own temporary directory, no snapshots
// and no append-only file: what it holds is gone when it stops. On Linux
// it receives SIGKILL when the process that started it dies (parent-death
// signal), so a test binary killed by its timeout leaves no server
// running. [Server.Pid] is its process id, for reading its processor time
// from /proc as the ZooKeeper servers' is read (internal/zkserver).
package redisserver

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

// ErrNoRedis is returned by Start when redis-server is not installed
// (scripts/install-deps.sh installs it).
var ErrNoRedis = errors.New("redisserver: redis-server not found on PATH (scripts/install-deps.sh installs it)")

// Server is a redis-server process started by Start on 127.0.0.1, with no
// persistence.
type Server struct {
	Addr string // host:port, where it serves

	cmd    *exec.Cmd
	dir    string
	out    *tailBuffer
	exited chan struct{} // closed once the process was reaped
	once   sync.Once
}

// Start starts a redis-server on 127.0.0.1 and a free port and waits
// until it answers PING. A port taken between its choice and the server's
// bind (another process on a shared machine) costs a retry.
func Start(ctx context.Context) (*Server, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedis
	}
	for attempt := 1; ; attempt++ {
		s, err := start(ctx, path)
		if err == nil || attempt == 3 || ctx.Err() != nil {
			return s, err
		}
	}
}

func start(ctx context.Context, path string) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("redisserver: free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "redisserver-")
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, out: &tailBuffer{max: 4 << 10}, exited: make(chan struct{})}
	s.cmd = exec.Command(path, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", "")
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	setProcAttrs(s.cmd)
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redisserver: start redis-server: %w", err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.await(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("redisserver: redis-server on %s: %w; its output: %s", s.Addr, err, s.out)
	}
	return s, nil
}

// await waits until the server answers PING, it exits, or ctx is done.
func (s *Server) await(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.ping() == nil {
			return nil
		}
		select {
		case <-s.exited:
			return errors.New("exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// ping sends PING and reads PONG, on a connection of its own.
func (s *Server) ping() error {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
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

// Pid is the server's process id: its processor time is read from
// /proc/<pid>/stat while it runs.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Close stops the server by its pid (SIGTERM, SIGKILL after 5 s), waits
// for it and removes its directory. It may be called more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		terminate(s.cmd, false)
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			terminate(s.cmd, true)
			<-s.exited
		}
		os.RemoveAll(s.dir)
	})
}

// tailBuffer keeps the last max bytes written to it: the server's output,
// quoted when it does not start.
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

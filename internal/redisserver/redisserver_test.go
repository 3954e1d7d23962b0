package redisserver

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStart: Start serves PING on 127.0.0.1, Pid names the running server,
// and Close stops it by its pid (twice is harmless).
func TestStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx)
	if errors.Is(err, ErrNoRedis) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ping(); err != nil {
		t.Fatal(err)
	}
	proc := "/proc/" + strconv.Itoa(s.Pid())
	if _, err := os.Stat("/proc/self"); err == nil {
		if _, err := os.Stat(proc); err != nil {
			t.Errorf("pid %d: %v", s.Pid(), err)
		}
	}
	dir := s.dir
	s.Close()
	s.Close()
	if err := s.ping(); err == nil {
		t.Error("redis-server still answers after Close")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("its directory %s is left: %v", dir, err)
	}
}

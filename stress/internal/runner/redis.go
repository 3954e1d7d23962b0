package runner

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tierlock/tierlock/internal/redisserver"
	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/stress/internal/fleet"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// The redsync implementation runs on one redis-server, which stress starts
// for the whole run (a matrix: for all its cells) when redsync is among
// the implementations, next to ZooKeeper, and stops by its pid at the end.
// Its runs are measured as the others are: the server's processor time is
// read from /proc by its pid, as the ZooKeeper servers' is, and its
// requests from its command counter (INFO stats: the commands it ran,
// those of its scripts included), at the edges of the window.

// StartRedis starts the redis-server of the redsync runs, saying so on
// stderr.
func StartRedis(ctx context.Context, stderr io.Writer) (*redisserver.Server, error) {
	fmt.Fprintln(stderr, "stress: starting a local redis-server for redsync")
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := redisserver.Start(sctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", fleet.ErrRun, err)
	}
	return s, nil
}

// UseRedis makes the redsync runs use s, a redis-server started (and
// stopped) by the caller; call it before Setup. Without it, Setup starts
// one when redsync is among the implementations.
func (r *Runner) UseRedis(s *redisserver.Server) { r.redis = s }

// setupRedis starts the redis-server if the runs need one and none was
// given, and opens the parent's own connection to it, which reads its
// counters.
func (r *Runner) setupRedis(ctx context.Context) error {
	if !slices.Contains(r.cfg.Impls, proto.Redsync) {
		return nil
	}
	if r.redis == nil {
		s, err := StartRedis(ctx, r.stderr)
		if err != nil {
			return err
		}
		r.redis, r.redisStarted = s, true
	}
	r.rinfo = redis.NewClient(&redis.Options{Addr: r.redis.Addr, PoolSize: 1})
	// Connected now, so that the connection's own commands (HELLO) are not
	// counted inside a window.
	if err := r.rinfo.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("%w: redis-server at %s: %w", fleet.ErrRun, r.redis.Addr, err)
	}
	return nil
}

// closeRedis closes the parent's connection and stops the server if Setup
// started it.
func (r *Runner) closeRedis() {
	if r.rinfo != nil {
		r.rinfo.Close()
	}
	if r.redisStarted {
		r.redis.Close()
	}
}

// redisAddr is the redis-server the workers of run name use ("" unless
// it is redsync's).
func (r *Runner) redisAddr(name proto.Impl) string {
	if name != proto.Redsync || r.redis == nil {
		return ""
	}
	return r.redis.Addr
}

// redisEdges is the redis-server as the edges of a redsync run's window
// read it (nil for the other implementations, read on ZooKeeper).
func (r *Runner) redisEdges(name proto.Impl) *redisReader {
	if name != proto.Redsync || r.rinfo == nil {
		return nil
	}
	return &redisReader{client: r.rinfo, pid: r.redis.Pid()}
}

// redisReader reads a redis-server's command counter and processor time.
type redisReader struct {
	client *redis.Client
	pid    int
}

// read returns the commands the server has processed and the processor
// time it has used, each with whether it could be read.
func (rr *redisReader) read(ctx context.Context) (commands int64, ok bool, cpu time.Duration, cpuOK bool) {
	info, err := rr.client.Info(ctx, "stats").Result()
	if err == nil {
		commands, ok = infoField(info, "total_commands_processed")
	}
	cpu, err = zkserver.ProcessCPU(rr.pid)
	return commands, ok, cpu, err == nil
}

// infoField reads an integer field of INFO's answer ("name:value" lines).
func infoField(info, name string) (int64, bool) {
	for _, line := range strings.Split(info, "\n") {
		if v, found := strings.CutPrefix(strings.TrimSpace(line), name+":"); found {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

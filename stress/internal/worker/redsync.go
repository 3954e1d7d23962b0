package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/wire"
)

// redsyncImpl is go-redsync/redsync v4 on the one redis-server the parent
// started (task.Redis), as its users write it: one go-redis client per
// process, redsync.New over its pool, and a Mutex per goroutine and key,
// the keys being the lock paths. Every waiting goroutine polls its key
// (SET NX, then its unlock script to clean up the failed try) every 50 to
// 250 ms, redsync's default retry delay.
type redsyncImpl struct {
	client *redis.Client
	rs     *redsync.Redsync
	paths  []string
}

// redsyncTries replaces redsync's default of 32 tries (each after a random
// 50-250 ms delay: a few seconds of waiting), after which LockContext fails
// with ErrFailed: under contention a waiter would give up with a lock
// error, which no other implementation here does. With this many a waiter
// waits as long as the run, at least 50 ms x MaxInt32 (years), and gives
// up only through its context when a timed run ends, as tier's waiters do.
const redsyncTries = math.MaxInt32

func newRedsyncImpl(ctx context.Context, task proto.Task) (*redsyncImpl, error) {
	if task.Redis == "" {
		return nil, errors.New("no redis-server address in the task")
	}
	client := redis.NewClient(&redis.Options{
		Addr: task.Redis,
		// A goroutine has at most one command in flight (redsync sends its
		// commands to one server one after the other), so with a connection
		// per goroutine no command waits for one: go-redis's default (10 per
		// processor) would make thousands of goroutines queue for the pool,
		// and a command that waits past redsync's per-try timeout (5% of the
		// 8 s expiry) fails that try. Connections are opened as needed.
		PoolSize: task.Goroutines,
	})
	client.AddHook(countHook{tally})
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("redis-server at %s: %w", task.Redis, err)
	}
	return &redsyncImpl{client: client, rs: redsync.New(goredis.NewPool(client)), paths: task.Paths}, nil
}

// tokenKind: redsync has no fencing token (its value is a random string),
// so the checker checks the holds' times alone.
func (im *redsyncImpl) tokenKind() string { return "" }

func (im *redsyncImpl) holder(int) holder {
	return &redsyncHolder{im: im, mutexes: make([]*redsync.Mutex, len(im.paths))}
}

func (im *redsyncImpl) close() error { return im.client.Close() }

type redsyncHolder struct {
	im      *redsyncImpl
	mutexes []*redsync.Mutex // by path, made on first use
}

// acquire waits for the key through LockContext: the defaults users get
// (8 s expiry, 50-250 ms between tries) but for the tries. When a timed
// run ends, ctx ends the wait (LockContext then returns ErrFailed).
func (h *redsyncHolder) acquire(ctx context.Context, p int) (int64, error) {
	if h.mutexes[p] == nil {
		h.mutexes[p] = h.im.rs.NewMutex(h.im.paths[p], redsync.WithTries(redsyncTries))
	}
	return 0, h.mutexes[p].LockContext(ctx)
}

// release runs redsync's unlock script: it deletes the key if it still
// holds this hold's value; false means the key had expired or was another
// holder's.
func (h *redsyncHolder) release(p int) error {
	ok, err := h.mutexes[p].UnlockContext(context.Background())
	if err == nil && !ok {
		err = errors.New("redsync: unlock found the key gone or another's")
	}
	return err
}

// lost: a redsync Mutex does not notice that its key expired.
func (h *redsyncHolder) lost(int) (<-chan struct{}, func() error) { return nil, nil }

// countHook counts the go-redis client's connections and commands into
// the worker's request counter, each command as the ZooKeeper request of
// the same effect, so that redsync's requests per acquisition fill the
// columns the ZooKeeper implementations' do: writes are SET (redsync's
// SET NX PX, the acquire: create) and its scripts (EVALSHA, or EVAL when
// the server does not know the script yet: the unlock script, delete; it
// never extends here, a hold being far shorter than the expiry); reads
// (GET, PTTL, EXISTS) are getData; the rest (HELLO and CLIENT on a new
// connection, PING) is other. A command is counted when the client is
// given it, as the ZooKeeper requests are when written: with a connection
// per goroutine none waits for the pool.
type countHook struct{ c *wire.Counter }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			h.c.Connected()
		}
		return conn, err
	}
}

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.c.Count(redisOp(cmd.Name()))
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.c.Count(redisOp(cmd.Name()))
		}
		return next(ctx, cmds)
	}
}

// redisOp is the ZooKeeper opcode a Redis command (lower case) is counted
// as.
func redisOp(name string) int32 {
	switch name {
	case "set", "setnx":
		return wire.OpCreate
	case "evalsha", "eval":
		return wire.OpDelete
	case "pexpire", "expire":
		return wire.OpSetData
	case "get", "pttl", "exists":
		return wire.OpGetData
	}
	return wire.OpOther
}

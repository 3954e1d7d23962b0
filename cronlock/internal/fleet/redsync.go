package fleet

import (
	"context"
	"errors"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/robfig/cron/v3"
)

// The baseline: a Redis lock in a cron.JobWrapper, as robfig/cron users
// write it today. What they write, looked up for this test:
//
//   - hanagantig/cron (a fork of robfig/cron, locker.go): a redsync mutex
//     per job key, taken with LockContext and redsync's default retries
//     (32 tries, 50-250 ms apart), held, extended, while the job runs,
//     unlocked after it;
//   - bombsimon/distcron (robfig/cron v3): a redsync mutex per job name,
//     taken with Lock (the same retries) around the job;
//   - go-kratos-ecosystem's crontab SkipIfStillMutexRunning (a robfig/cron
//     v3 JobWrapper): a Redis SET NX taken once, the tick skipped if it is
//     held, deleted after the job.
//
// "redsync" is the first two: wait for the lock, run, release.
// "redsync-try" is the third on redsync: one attempt (TryLock), skip if
// held, run, release. Neither extends the lock: redsync's default expiry
// (8 s) outlasts the fleet's runs (at most 50 ms).
func init() {
	Register("redsync", Variant{Backend: Redis, Expect: Repeats, Open: openRedsync(true)})
	Register("redsync-try", Variant{Backend: Redis, Expect: Repeats, Open: openRedsync(false)})
}

// openRedsync opens one go-redis client on the Redis server, and wraps
// each job in a redsync mutex named after the job under c.Root; wait
// takes the mutex with redsync's retries, else with one attempt.
func openRedsync(wait bool) Factory {
	return func(ctx context.Context, c Config) (Lock, error) {
		if len(c.Servers) != 1 {
			return Lock{}, errors.New("redsync: want one Redis server")
		}
		client := redis.NewClient(&redis.Options{Addr: c.Servers[0]})
		if err := client.Ping(ctx).Err(); err != nil {
			client.Close()
			return Lock{}, err
		}
		rs := redsync.New(goredis.NewPool(client))
		wrap := func(name string, job cron.Job) cron.Job {
			key := c.Root + ":" + name
			return cron.FuncJob(func() {
				// A mutex per run, not per job as distcron keeps: redsync's
				// Mutex keeps the value of its last Lock, so two runs of a
				// job at once (one still waiting for the lock when the next
				// tick fires) would share and overwrite it. In Redis it is
				// the same lock: the key is the job's.
				m := rs.NewMutex(key)
				lock := m.TryLockContext
				if wait {
					lock = m.LockContext
				}
				if err := lock(context.Background()); err != nil {
					c.Logger.Debug("redsync: tick skipped", "job", name, "err", err)
					return
				}
				defer func() {
					if _, err := m.UnlockContext(context.Background()); err != nil {
						c.Logger.Warn("redsync: unlock", "job", name, "err", err)
					}
				}()
				job.Run()
			})
		}
		return Lock{Wrap: wrap, Close: client.Close}, nil
	}
}

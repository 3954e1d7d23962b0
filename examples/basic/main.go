// Command basic is the first tierlock program to read. It takes a lock that
// works across goroutines and processes, re-enters it, reads its fencing
// token, watches another goroutine and another session bounce off it, does
// work that notices if the lock is lost, and releases it. Then it takes the
// lock again and lets another client delete its node, to show what losing a
// lock looks like from the inside.
//
// Start a ZooKeeper (scripts/zk.sh start serves one on 127.0.0.1:2181),
// then:
//
//	go run ./examples/basic                        # 127.0.0.1:2181
//	go run ./examples/basic -zk zk1:2181,zk2:2181  # or TIERLOCK_ZK_SERVERS=...
//
// With no server there, it says so within zklock.ConnectTimeout (10s).
//
// Then read examples/jobs: many goroutines, one lock per job, fencing.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

func main() {
	// Ctrl-C cancels ctx.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0) // -h: the flag package printed the usage
	case err != nil:
		fmt.Fprintln(os.Stderr, "basic:", err)
		os.Exit(1)
	}
}

// run is the whole program; main and the test call it.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("basic", flag.ContinueOnError)
	zkFlag := fs.String("zk", defaultServers(), "ZooKeeper servers, host:port,... ($TIERLOCK_ZK_SERVERS, else 127.0.0.1:2181)")
	path := fs.String("path", "/tierlock-examples/basic", "lock path")
	verbose := fs.Bool("v", false, "show the library's logs on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }

	// The library logs through log/slog. It warns when a lock is lost, which
	// this program does on purpose below, so its logs are off unless -v.
	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}

	// 1. Find ZooKeeper: the flag, else the environment, else 127.0.0.1:2181.
	servers, err := zkServers(*zkFlag)
	if err != nil {
		return err
	}
	say("ZooKeeper: %s", strings.Join(servers, ","))

	// 2. One Session per process: one connection, one ZooKeeper session,
	// shared by all the locks of the process. Closing it deletes every lock
	// node it still has. Connect waits for the session: give it a deadline
	// (connect does), so that a server that is not there is an error, not
	// a hang.
	s, err := connect(ctx, servers, zklock.WithLogger(logger))
	if err != nil {
		return err
	}
	defer s.Close()
	say("connected: ZooKeeper session 0x%x", s.SessionID())

	// 3. A tier.Lock on a path. Share it between goroutines: it has a gate in
	// the process (tier 1) in front of one ZooKeeper lock (tier 2), so the
	// process puts at most one node on ZooKeeper for it, however many
	// goroutines want it.
	lock, err := tier.New(s, *path)
	if err != nil {
		return err
	}
	defer lock.Close()

	// Another process has its own session and its own tier.Lock on the
	// same path. A second session in this process stands in for it.
	s2, err := connect(ctx, servers, zklock.WithLogger(logger))
	if err != nil {
		return err
	}
	defer s2.Close()
	lock2, err := tier.New(s2, *path)
	if err != nil {
		return err
	}
	defer lock2.Close()

	token, err := holdAndRelease(ctx, lock, lock2, say)
	if err != nil {
		return err
	}
	return loseTheLock(ctx, lock, s2, token, say)
}

// holdAndRelease takes the lock, re-enters it, shows another goroutine and
// another process kept out, works under it and releases it (steps 4 to
// 8). It returns the hold's fencing token.
func holdAndRelease(ctx context.Context, lock, lock2 *tier.Lock, say func(string, ...any)) (int64, error) {
	// 4. Acquire waits for the gate, then for the ZooKeeper lock. ctx bounds
	// the wait (cancel it, or give it a deadline, to give up waiting).
	//
	// What it returns, held, is the hold itself: pass it to everything done
	// under the lock, and to Release. A hold belongs to a context, not to a
	// goroutine (Go has no goroutine identity to hang it on).
	held, err := lock.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	// The fencing token is the ZooKeeper transaction id that made this hold;
	// every later holder of the path gets a larger one. Send it with every
	// write to the resource the lock guards, and have the resource reject a
	// token smaller than the largest it has seen: a holder that was paused
	// (GC, a stopped VM) past its session and no longer holds the lock, but
	// does not know it yet, is then refused.
	token, err := lock.Token(held)
	if err != nil {
		return 0, err
	}
	say("Acquire: holding %s, hold count %d, fencing token %d", lock.Path(), lock.HoldCount(held), token)
	if err := reenter(lock, held, say); err != nil {
		return 0, err
	}
	if err := keptOut(ctx, lock, lock2, say); err != nil {
		return 0, err
	}

	// 7. Work under the lock. held.Done() is closed when the hold ends, and
	// what closes it is one of:
	//   - the ZooKeeper session expired: the server deleted our node, and
	//     another process may hold the lock now;
	//   - the connection to ZooKeeper dropped, or the session could not be
	//     confirmed with the ensemble's leader for a quarter of the session
	//     timeout: we cannot know whether we still hold the lock, and we are
	//     told before the server could expire the session and hand the lock
	//     to someone else (zklock.WithLossOnExpiryOnly tolerates short
	//     outages, with a bounded overlap);
	//   - someone deleted our lock node (an operator, a script);
	//   - lock.Close or s.Close;
	//   - our own Release.
	// The ctx given to Acquire does not end the hold: it only bounds the
	// wait. So work in steps and stop as soon as held.Done() fires.
	steps, lost := work(held, 3, nil)
	if lost != nil {
		return 0, fmt.Errorf("lock lost during work: %w", lost)
	}
	say("work under the lock: %d steps done, held.Done() never fired", steps)

	// 8. Release: the ZooKeeper node first, then the gate. The held context
	// is cancelled now; don't use it any more.
	if err := lock.Release(held); err != nil {
		return 0, err
	}
	say("Release: released; the held context is done: %v", context.Cause(held))
	return token, nil
}

// reenter is step 5. Reentrancy: acquiring again WITH THE HELD CONTEXT
// counts up and returns at once; no ZooKeeper request. Each Acquire needs
// its Release.
func reenter(lock *tier.Lock, held context.Context, say func(string, ...any)) error {
	inner, err := lock.Acquire(held)
	if err != nil {
		return err
	}
	say("Acquire with the held context: re-entered, hold count %d (no ZooKeeper request)", lock.HoldCount(held))
	if err := lock.Release(inner); err != nil {
		return err
	}
	say("Release of the inner hold: hold count %d, still held", lock.HoldCount(held))
	return nil
}

// keptOut is step 6: anyone else is kept out while we hold the lock.
func keptOut(ctx context.Context, lock, lock2 *tier.Lock, say func(string, ...any)) error {
	// Another goroutine, with a context that does not carry the hold, is
	// stopped at the gate in this process: a TryAcquire returns false at
	// once, without asking ZooKeeper.
	type result struct {
		ok  bool
		err error
	}
	other := make(chan result)
	go func() {
		h, ok, err := lock.TryAcquire(context.Background())
		if ok { // cannot happen while we hold the lock; tidy up if it did
			_ = lock.Release(h)
		}
		other <- result{ok, err}
	}()
	r := <-other
	if r.err != nil {
		return r.err
	}
	say("TryAcquire from another goroutine: %v (stopped at the gate in this process)", r.ok)

	// Another process's TryAcquire reaches ZooKeeper, finds our node first
	// in the queue, takes its own node back and returns false.
	if h, ok, err := lock2.TryAcquire(ctx); err != nil {
		return err
	} else if ok {
		_ = lock2.Release(h)
		return errors.New("another session got the lock while we held it")
	}
	say("TryAcquire from another session (another process): false (ZooKeeper queue: our node is first)")
	return nil
}

// loseTheLock is step 9. Losing the lock: acquire again (a new hold, a
// larger token than token), then let the other session delete our node
// early in the work, as an operator cleaning up with zkCli (or tierlock
// break) might. A hold that lasts watches its node once it has lasted a
// quarter of the session timeout, so the work sees held.Done() within that
// and a round trip.
func loseTheLock(ctx context.Context, lock *tier.Lock, s2 *zklock.Session, token int64, say func(string, ...any)) error {
	held, err := lock.Acquire(ctx)
	if err != nil {
		return err
	}
	token2, err := lock.Token(held)
	if err != nil {
		return err
	}
	if token2 <= token {
		return fmt.Errorf("fencing token went from %d to %d", token, token2)
	}
	say("Acquire again: fencing token %d (> %d: a guarded resource can tell the holders apart)", token2, token)
	var deleteErr error
	deleteHolder := func() {
		node, err := holderNode(ctx, s2, lock.Path())
		if err == nil {
			say("  another client deletes the lock node %s", node)
			err = s2.Conn().Delete(lock.Path()+"/"+node, -1)
		}
		deleteErr = err
	}
	steps, lost := work(held, 250, deleteHolder)
	if deleteErr != nil {
		_ = lock.Release(held)
		return deleteErr
	}
	if lost == nil {
		_ = lock.Release(held)
		return errors.New("the lock node was deleted, but the hold did not end")
	}
	// context.Cause says why the hold ended; it wraps tier.ErrLockLost.
	say("work interrupted after %d steps: held.Done() fired: %v", steps, lost)

	// The hold still has to be released: that frees the gate for the next
	// goroutine. Release reports the loss, so code that ignored held.Done()
	// learns at the end that its work was not protected.
	err = lock.Release(held)
	say("Release after the loss: %v (errors.Is(err, tier.ErrLockLost) = %v)", err, errors.Is(err, tier.ErrLockLost))
	say("done")
	return nil
}

// work does up to n steps of 20ms under the lock held carries, stopping
// early when the hold ends. It calls midway (if not nil) after the second
// step. It returns the number of steps done and, if the hold ended, why.
func work(held context.Context, n int, midway func()) (int, error) {
	for i := 0; i < n; i++ {
		select {
		case <-held.Done():
			return i, context.Cause(held)
		case <-time.After(20 * time.Millisecond):
			// One step of real work would go here. Anything that writes to
			// the guarded resource should send the fencing token with it.
		}
		if i == 1 && midway != nil {
			midway()
		}
	}
	return n, nil
}

// holderNode returns the name of the node first in the lock's queue (the
// holder's). A zklock.Lock on the path, never acquired, lists the queue in
// the order the lock grants it (Participants).
func holderNode(ctx context.Context, s *zklock.Session, path string) (string, error) {
	l, err := zklock.New(s, path)
	if err != nil {
		return "", err
	}
	defer l.Close()
	queue, err := l.Participants(ctx)
	if err != nil {
		return "", err
	}
	if len(queue) == 0 || !queue[0].Holder {
		return "", fmt.Errorf("no lock node under %s", path)
	}
	return queue[0].Node, nil
}

// defaultServers is -zk's default: $TIERLOCK_ZK_SERVERS, else a server on
// this machine's port 2181 (scripts/zk.sh start serves one there).
func defaultServers() string {
	if v := os.Getenv("TIERLOCK_ZK_SERVERS"); v != "" {
		return v
	}
	return "127.0.0.1:2181"
}

// zkServers splits -zk's host:port list, and refuses an empty one.
func zkServers(flagValue string) ([]string, error) {
	var servers []string
	for _, a := range strings.Split(flagValue, ",") {
		if a = strings.TrimSpace(a); a != "" {
			servers = append(servers, a)
		}
	}
	if len(servers) == 0 {
		return nil, errors.New("no ZooKeeper given: use -zk host:port[,host:port...] or set TIERLOCK_ZK_SERVERS")
	}
	return servers, nil
}

// connect opens a session, giving up after zklock.ConnectTimeout, or when
// ctx ends if that is sooner, with an error that says where it looked,
// for how long, and the last dial error (such as "connection refused").
func connect(ctx context.Context, servers []string, opts ...zklock.SessionOption) (*zklock.Session, error) {
	cctx, cancel := context.WithTimeout(ctx, zklock.ConnectTimeout)
	defer cancel()
	deadline, _ := cctx.Deadline()
	bound := time.Until(deadline).Round(100 * time.Millisecond)
	s, err := zklock.Connect(cctx, servers, opts...)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("no ZooKeeper reachable at %s within %v (start one with scripts/zk.sh start, or give -zk host:port): %w",
			strings.Join(servers, ","), bound, err)
	}
	return s, err
}

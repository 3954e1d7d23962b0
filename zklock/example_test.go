package zklock_test

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

func ExampleConnect() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The servers of your ensemble, e.g. []string{"zk1:2181", "zk2:2181"};
	// here the ZooKeeper the package's tests share.
	servers := zktest.Addrs()

	// One Session per process, shared by all its locks. Connect returns
	// once a ZooKeeper session is established (or ctx ends).
	s, err := zklock.Connect(ctx, servers,
		zklock.WithSessionTimeout(10*time.Second), // a crashed holder's locks pass on after this
		zklock.WithLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close() // deletes the session's lock nodes at once

	fmt.Println("state:", s.State())
	// Output: state: connected
}

func ExampleLock_Acquire() {
	ctx := context.Background()
	s, err := zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	// A process-level lock: one holder at a time, not reentrant. To share
	// a lock among goroutines, use package tier.
	lock, err := zklock.New(s, "/examples/zklock-acquire", zklock.WithLabel("example"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()

	// Acquire returns the hold: its node, its fencing token, its loss.
	hold, err := lock.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("node under:", path.Dir(hold.Node()))
	fmt.Println("fencing token > 0:", hold.Token() > 0)

	// Another lock on the path (as in another process) cannot have it.
	other, err := zklock.New(s, "/examples/zklock-acquire")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer other.Close()
	_, ok, err := other.TryAcquire(ctx)
	fmt.Println("other TryAcquire:", ok, err)

	// Lost is closed if the hold ends without Release (session expired,
	// connection lost, node deleted).
	select {
	case <-hold.Lost():
		fmt.Println("lost:", hold.Err())
	default:
		fmt.Println("still held")
	}

	if err := hold.Release(); err != nil {
		fmt.Println(err)
	}
	fmt.Println("release again:", hold.Release())
	// Output:
	// node under: /examples/zklock-acquire
	// fencing token > 0: true
	// other TryAcquire: false <nil>
	// still held
	// release again: zklock: lock not held
}

// ListParticipants shows who holds and who waits, as the tierlock command's
// ls does.
func ExampleListParticipants() {
	ctx := context.Background()
	s, err := zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	lock, err := zklock.New(s, "/examples/zklock-participants", zklock.WithLabel("report-job"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()
	hold, err := lock.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer hold.Release()

	queue, err := zklock.ListParticipants(ctx, s, "/examples/zklock-participants")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range queue {
		fmt.Println(p.Family, p.Holder, p.Owner == s.SessionID())
	}
	// Output: lock true true
}

// WithDigestAuth and WithACL keep clients without the fleet's credentials
// from deleting or queueing nodes on the fleet's lock paths; they can
// still read the queue.
func ExampleWithDigestAuth() {
	ctx := context.Background()
	s, err := zklock.Connect(ctx, zktest.Addrs(),
		zklock.WithDigestAuth("fleet", "s3cret"), // sent before the first lock request and on every reconnect
		zklock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	// The fleet may do everything, the world may only read: on the lock
	// path (made by the lock with this ACL) that denies strangers CREATE
	// and DELETE of lock nodes.
	fleet := append(zk.DigestACL(zk.PermAll, "fleet", "s3cret"), zk.WorldACL(zk.PermRead)...)
	lock, err := zklock.New(s, "/examples/zklock-acl/job", zklock.WithACL(fleet))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()
	hold, err := lock.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer hold.Release()

	acl, _, err := s.Conn().GetACL("/examples/zklock-acl/job")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range acl {
		fmt.Println(a.Scheme, a.Perms == zk.PermAll)
	}
	// Output:
	// digest true
	// world false
}

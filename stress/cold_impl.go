package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zkcompat"
	"github.com/tierlock/tierlock/zklock"
)

// The connections of stress -cold, one kind per implementation.

// coldClient is one connection of an implementation.
type coldClient interface {
	// lock makes a handle on path and takes the lock, returning what
	// releases it (and closes the handle).
	lock(ctx context.Context, path string) (release func() error, err error)
	// close closes the connection; it may be called more than once, and
	// ends a lock that waits.
	close()
}

// connClient is a zk.Conn of the caller's own, locked through zk.Lock or,
// with compat, through the drop-in.
type connClient struct {
	conn    *zk.Conn
	compat  bool
	drained chan struct{} // closed once the event channel is closed
	once    sync.Once
}

// dialConn connects as go-zookeeper's users do, and the drop-in's as
// docs/interop.md tells them to (zkcompat.Connect in zk.Connect's place),
// and waits for the session.
func dialConn(ctx context.Context, servers []string, cfg coldConfig, compat bool) (*connClient, error) {
	var conn *zk.Conn
	var events <-chan zk.Event
	var err error
	if compat {
		conn, events, err = zkcompat.Connect(servers, cfg.SessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	} else {
		conn, events, err = zk.Connect(servers, cfg.SessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	}
	if err != nil {
		return nil, err
	}
	c := &connClient{conn: conn, compat: compat, drained: make(chan struct{})}
	ready := make(chan struct{})
	// go-zookeeper drops events when its channel is full: read it until
	// the connection closes.
	go func() {
		defer close(c.drained)
		var once sync.Once
		for ev := range events {
			if ev.State == zk.StateHasSession {
				once.Do(func() { close(ready) })
			}
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	select {
	case <-ready:
		return c, nil
	case <-ctx.Done():
		c.close()
		return nil, fmt.Errorf("connect to %s: %w", strings.Join(servers, ","), ctx.Err())
	}
}

func (c *connClient) lock(ctx context.Context, path string) (func() error, error) {
	acl := zk.WorldACL(zk.PermAll)
	if c.compat {
		l := zkcompat.NewLock(c.conn, path, acl)
		if err := l.LockContext(ctx); err != nil {
			return nil, err
		}
		return l.Unlock, nil
	}
	l := zk.NewLock(c.conn, path, acl)
	if err := l.Lock(); err != nil {
		return nil, err
	}
	return l.Unlock, nil
}

// close ends the drop-in's use of the connection, then the connection,
// and waits until its event channel is closed.
func (c *connClient) close() {
	c.once.Do(func() {
		if c.compat {
			zkcompat.CloseConn(c.conn)
		}
		c.conn.Close()
	})
	<-c.drained
}

// tierClient is a session of zklock.Connect, locked through tier.Lock.
type tierClient struct {
	s    *zklock.Session
	once sync.Once
}

// dialTier connects as tierlock's users do: zklock.Connect, which returns
// once the session is established.
func dialTier(ctx context.Context, servers []string, cfg coldConfig) (*tierClient, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	s, err := zklock.Connect(ctx, servers, zklock.WithSessionTimeout(cfg.SessionTimeout))
	if err != nil {
		return nil, err
	}
	return &tierClient{s: s}, nil
}

func (c *tierClient) lock(ctx context.Context, path string) (func() error, error) {
	l, err := tier.New(c.s, path)
	if err != nil {
		return nil, err
	}
	held, err := l.Acquire(ctx)
	if err != nil {
		return nil, errors.Join(err, l.Close())
	}
	return func() error { return errors.Join(l.Release(held), l.Close()) }, nil
}

func (c *tierClient) close() { c.once.Do(func() { _ = c.s.Close() }) }

// quietLogger discards go-zookeeper's log lines.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// loadAverage is the host's load average (1, 5, 15 min), or "" where
// /proc/loadavg cannot be read.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

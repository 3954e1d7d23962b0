package session

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
)

// The servers' tick, read from a server. Without WithServerTickTime the
// lease takes the tick as half the session timeout (bounds.go), the most
// ZooKeeper's negotiation allows: with T = 10 s, π is 3.1 s, and a session
// that sees no handshake (Wrap: a caller's connection) needs a chain
// across π before its first grant. A server grants no session less than
// its minSessionTimeout, two ticks unless set otherwise: a connect that
// asks for less is granted exactly that, so half of it bounds the tick
// (as tightly as the default allows; a larger minSessionTimeout only
// overstates it, which shortens the lease). The probe asks once per
// process and server address: a session made and closed at the server,
// two of its transactions.
//
// What it buys: the first grant on a caller's connection waits π of the
// real tick (125 ms on a 200-ms tick), not of T/2.

// probeAsk is the timeout the probe asks for: less than any server's
// minSessionTimeout worth the name, yet enough for go-zookeeper, whose
// handshake read waits ten times two thirds of it (666 ms).
const probeAsk = 100 * time.Millisecond

// probed holds each server address's tick as a probe read it
// (time.Duration), and a channel closed when the probe ended (probing).
var probed struct {
	mu    sync.Mutex
	ticks map[string]time.Duration
	runs  map[string]chan struct{}
}

// probedTick returns the tick a probe read of addr (0: none yet).
func probedTick(addr string) time.Duration {
	probed.mu.Lock()
	defer probed.mu.Unlock()
	return probed.ticks[addr]
}

// probeTick reads the tick of the server at addr, unless a probe of it
// ran or runs already in this process (it waits for that one), within ctx.
func probeTick(ctx context.Context, addr string, log *slog.Logger) time.Duration {
	probed.mu.Lock()
	if d, ok := probed.ticks[addr]; ok {
		probed.mu.Unlock()
		return d
	}
	run, ok := probed.runs[addr]
	if !ok {
		if probed.runs == nil {
			probed.ticks, probed.runs = map[string]time.Duration{}, map[string]chan struct{}{}
		}
		run = make(chan struct{})
		probed.runs[addr] = run
	}
	probed.mu.Unlock()
	if ok { // another floor probes addr: its answer is as good
		select {
		case <-run:
		case <-ctx.Done():
		}
		return probedTick(addr)
	}
	least, err := leastGranted(ctx, addr)
	probed.mu.Lock()
	delete(probed.runs, addr)
	if err == nil {
		probed.ticks[addr] = least / 2
	}
	probed.mu.Unlock()
	close(run)
	if err != nil {
		log.Debug("the servers' tick not read: taken as half the session timeout", "server", addr, "err", err)
		return 0
	}
	return least / 2
}

// leastGranted connects to addr asking for probeAsk and returns the
// session timeout granted, closing the session at once.
func leastGranted(ctx context.Context, addr string) (time.Duration, error) {
	conn, events, err := zk.Connect([]string{addr}, probeAsk, zk.WithLogInfo(false),
		zk.WithLogger(zkLogger{slog.New(slog.DiscardHandler)}))
	if err != nil {
		return 0, err
	}
	defer func() {
		conn.Close()
		for range events { // the connection's goroutines end with the channel
		}
	}()
	for {
		select {
		case e := <-events:
			if e.State == zk.StateHasSession {
				return GrantedTimeout(conn), nil
			}
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// probe reads the tick of the server the floor's connection reached first,
// once it has a session, and records it for the replay. Not where the
// tick was declared, nor over TLS (the probe dials plaintext, and a
// caller's dialer is go-zookeeper's secret), nor under an explorer's
// double (zc nil).
func (s *Floor) probe(zc *zk.Conn) {
	if s.cfg.ServerTick > 0 || zc == nil {
		return
	}
	if s.cfg.TLS != nil {
		s.tickUnknown("TLS: the probe dials plaintext")
		return
	}
	if !s.awaitConnected() {
		return
	}
	ctx, cancel := context.WithTimeout(s.life.ctx, s.lease.Timeout())
	defer cancel()
	addr := zc.Server()
	if d := probeTick(ctx, addr, s.log); d > 0 {
		trace.TickProbed(zc, 2*d)
		s.lease.setTick(d)
		return
	}
	s.tickUnknown("no answer to the probe from " + addr)
}

// tickUnknown says, once, what an unknown tick costs where it costs a
// caller's wait: under Wrap, which sees no handshake, a session's first
// grant waits for a chain across π = 5/8 of half the session timeout.
func (s *Floor) tickUnknown(why string) {
	if s.tap != nil {
		return // the handshake shows the first lease: nothing waits for the tick
	}
	s.log.Warn("the servers' tick is not known: a first lock on this connection waits 5/8 of half the session timeout; declare it with WithServerTickTime",
		"why", why, "wait", s.lease.Timeout()*5/16)
}

// awaitConnected waits until the floor is connected (true), or closed.
func (s *Floor) awaitConnected() bool {
	for s.State() != StateConnected {
		select {
		case <-s.st.changedChan():
		case <-s.life.ctx.Done():
			return false
		}
	}
	return true
}

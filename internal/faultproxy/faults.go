package faultproxy

import (
	"net"
	"time"
)

// The faults a Proxy injects, on demand.

// DropAll closes every open connection now, on both the client and the
// upstream side, so both peers see EOF or a reset. New connections are still
// accepted unless the proxy is partitioned.
func (p *Proxy) DropAll() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	links := p.detachAllLocked()
	p.stats.Dropped += int64(len(links))
	p.mu.Unlock()
	closeConns(links)
	p.log.Info("faultproxy: dropped all connections", "count", len(links))
}

// Partition drops all connections and then refuses new ones (accepting and
// closing them immediately) for d. If d <= 0 the partition lasts until Heal.
func (p *Proxy) Partition(d time.Duration) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.partitioned = true
	p.partitionUntil = time.Time{}
	if d > 0 {
		p.partitionUntil = time.Now().Add(d)
	}
	links := p.detachAllLocked()
	p.stats.Dropped += int64(len(links))
	p.mu.Unlock()
	closeConns(links)
	p.log.Info("faultproxy: partition", "duration", d, "dropped", len(links))
}

// Heal ends every fault that lasts: a partition, a pause, a stall, a
// blocked upstream and a blackhole. Bytes held meanwhile flow on in order.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.partitioned = false
	p.paused = false
	p.stalled = false
	p.stalledBack = false
	p.blockedUp = false
	p.blackholed = false
	p.cond.Broadcast()
	p.log.Info("faultproxy: healed")
}

// Pause stops forwarding bytes in both directions on all current and new
// connections while keeping them open: peers see no data at all. Each
// direction reads at most one chunk, which is held until Resume or Heal.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.paused = true
	p.log.Info("faultproxy: paused")
}

// Resume restarts forwarding after Pause; held bytes flow on in order.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.paused = false
	p.cond.Broadcast()
	p.log.Info("faultproxy: resumed")
}

// SetLatency delays every chunk forwarded in either direction by d, keeping
// byte order. d <= 0 removes the latency. Chunks already waiting keep the
// latency in force when they were read.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.latency = max(d, 0)
	p.log.Info("faultproxy: latency set", "latency", p.latency)
}

// DropAfter arms a one-shot fault: once the next n bytes have been forwarded
// from clients to the server (counted over all connections), all connections
// are dropped. Bytes beyond the n-th are not forwarded. n <= 0 disarms a
// pending fault.
func (p *Proxy) DropAfter(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.dropArmed = n > 0
	p.dropLeft = max(n, 0)
	p.dropReset = false
	p.log.Info("faultproxy: drop armed", "bytes", n)
}

// Stall blocks the clients' writes while the server's replies keep
// flowing: bytes from clients are neither forwarded nor read from the
// client sockets (at most one chunk per connection is read and held), so a
// client that keeps writing fills its socket buffers and blocks in write.
// It applies to current and new connections until Unstall or Heal; the held
// bytes then flow on in order. A client that closes its connection while
// stalled is not noticed before then.
func (p *Proxy) Stall() { p.setFlag(&p.stalled, true, "stall") }

// Unstall ends a Stall.
func (p *Proxy) Unstall() { p.setFlag(&p.stalled, false, "unstall") }

// StallReplies is Stall the other way: the server's bytes are neither
// forwarded nor read while the clients' keep flowing, until
// UnstallReplies or Heal; the held bytes then flow on in order. With
// Stall too, a link holds both ways, and each can be let go on its own.
func (p *Proxy) StallReplies() { p.setFlag(&p.stalledBack, true, "replies stalled") }

// UnstallReplies ends StallReplies.
func (p *Proxy) UnstallReplies() { p.setFlag(&p.stalledBack, false, "replies unstalled") }

// BlockUpstream is an asymmetric partition: bytes from clients are read and
// thrown away (the clients' writes succeed, the server hears nothing), while
// the server's bytes keep reaching the clients. It applies to current and
// new connections until UnblockUpstream or Heal; the bytes thrown away are
// lost for good, so a connection usually cannot carry on after it.
func (p *Proxy) BlockUpstream() { p.setFlag(&p.blockedUp, true, "upstream blocked") }

// UnblockUpstream ends BlockUpstream.
func (p *Proxy) UnblockUpstream() { p.setFlag(&p.blockedUp, false, "upstream unblocked") }

// Blackhole is a silent partition: the current connections stay open but
// nothing crosses them in either direction, not even a close (each side is
// no longer read, so that neither data nor an end of stream is noticed),
// and new connections are refused, until Heal. Unlike Partition the peers
// are not told anything: each finds out by its own timeouts, as across a
// real network partition. After Heal the held bytes and closes flow on.
func (p *Proxy) Blackhole() { p.setFlag(&p.blackholed, true, "blackhole") }

// Reset closes every open connection with a TCP reset (SO_LINGER 0) on both
// the client and the upstream side, as a middlebox or a crashed peer would:
// a client then sees ECONNRESET (or EPIPE on its next write) instead of an
// orderly end of stream. New connections are accepted as usual.
func (p *Proxy) Reset() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	links := p.detachAllLocked()
	p.stats.Reset += int64(len(links))
	p.mu.Unlock()
	for _, l := range links {
		resetConn(l.client)
		resetConn(l.upstream)
	}
	p.log.Info("faultproxy: reset all connections", "count", len(links))
}

// ResetAfter is DropAfter with Reset: once the next n bytes have been
// forwarded from clients to the server, all connections are reset. It cuts
// a connection between a request and its reply (or in the middle of a
// request), with ECONNRESET rather than an end of stream. n <= 0 disarms a
// pending fault (of either kind).
func (p *Proxy) ResetAfter(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.dropArmed = n > 0
	p.dropLeft = max(n, 0)
	p.dropReset = n > 0
	p.log.Info("faultproxy: reset armed", "bytes", n)
}

// setFlag sets one of the lasting faults and wakes the forwarders.
func (p *Proxy) setFlag(f *bool, v bool, what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	*f = v
	p.cond.Broadcast()
	p.log.Info("faultproxy: " + what)
}

// resetConn closes c so that the peer gets a TCP reset.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"
)

var (
	// ErrBadTarget is returned (wrapped) by New when the target address is
	// empty or not a valid "host:port".
	ErrBadTarget = errors.New("faultproxy: bad target address")
	// ErrBadListenAddr is returned (wrapped) by New when the listen address
	// is not a valid loopback "host:port".
	ErrBadListenAddr = errors.New("faultproxy: bad listen address")
	// ErrClosed is returned by methods called after Close.
	ErrClosed = errors.New("faultproxy: proxy closed")
)

const (
	bufSize     = 32 << 10
	dialTimeout = 5 * time.Second
)

// Option configures a Proxy in New.
type Option func(*config)

type config struct {
	listenAddr string
	logger     *slog.Logger
}

// WithListenAddr sets the address the proxy listens on. It must be a
// loopback address such as "127.0.0.1:0" (the default) or "localhost:2181".
func WithListenAddr(addr string) Option {
	return func(c *config) { c.listenAddr = addr }
}

// WithLogger sets the logger for connection and fault events. By default
// nothing is logged. A nil logger keeps the default.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// Stats is a snapshot of the proxy's connection counters.
type Stats struct {
	// Accepted counts client connections accepted and not refused.
	Accepted int64
	// Active is the number of client connections currently forwarded.
	Active int64
	// Dropped counts connections closed by a fault (DropAll, Partition,
	// DropAfter), not by either peer or by Close.
	Dropped int64
	// Reset counts connections closed with a TCP reset (Reset, ResetAfter).
	Reset int64
	// Discarded counts bytes from clients thrown away by BlockUpstream.
	Discarded int64
	// Upstream and Downstream count the bytes forwarded to the server and
	// to the clients. A test can watch Upstream to see a client's requests
	// and pings go out, e.g. to strike just before its next ping.
	Upstream, Downstream int64
	// Refused counts connections closed on accept during a partition or
	// a blackhole.
	Refused int64
	// DialFailed counts accepted connections closed because the target
	// could not be dialed.
	DialFailed int64
}

// Proxy forwards TCP connections from a local listener to a target address
// and injects faults on request. All methods are safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	log    *slog.Logger
	ctx    context.Context // canceled by Close; aborts dials
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu             sync.Mutex
	cond           *sync.Cond // signaled on Resume, Heal, link close, Close
	target         string
	links          map[*link]struct{}
	gen            uint64 // incremented by every DropAll
	partitioned    bool
	partitionUntil time.Time // zero: until Heal
	paused         bool
	stalled        bool // client→server: not read (Stall)
	blockedUp      bool // client→server: read and discarded (BlockUpstream)
	blackholed     bool // both directions not read, new connections refused
	latency        time.Duration
	dropArmed      bool
	dropLeft       int
	dropReset      bool // the armed fault resets (ResetAfter) instead of dropping
	stats          Stats
	closed         bool
}

// link is one proxied connection: a client and its upstream connection.
type link struct {
	client, upstream net.Conn
	done             chan struct{} // closed when the link is closed
	closed           bool          // guarded by Proxy.mu
}

// New starts a proxy that forwards connections to target ("host:port").
// It listens on 127.0.0.1 on a free port unless WithListenAddr is given, and
// accepts connections in the background until Close.
func New(target string, opts ...Option) (*Proxy, error) {
	if err := checkAddr(target); err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrBadTarget, target, err)
	}
	cfg := config{
		listenAddr: "127.0.0.1:0",
		logger:     slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if err := checkLoopback(cfg.listenAddr); err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrBadListenAddr, cfg.listenAddr, err)
	}
	ln, err := net.Listen("tcp", cfg.listenAddr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		ln:     ln,
		log:    cfg.logger.With("proxy", ln.Addr().String()),
		ctx:    ctx,
		cancel: cancel,
		target: target,
		links:  make(map[*link]struct{}),
	}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

func checkAddr(addr string) error {
	if addr == "" {
		return errors.New("empty address")
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

func checkLoopback(addr string) error {
	if err := checkAddr(addr); err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(addr)
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return errors.New("not a loopback address")
	}
	return nil
}

// Addr returns the address clients dial, e.g. "127.0.0.1:34567".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address new connections are forwarded to.
func (p *Proxy) Target() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.target
}

// SetTarget forwards new connections to addr, e.g. after the server was
// restarted on another port. Existing connections are unaffected. An invalid
// address is ignored (and logged).
func (p *Proxy) SetTarget(addr string) {
	if err := checkAddr(addr); err != nil {
		p.log.Warn("faultproxy: ignoring bad target", "target", addr, "err", err)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.target = addr
	p.log.Info("faultproxy: target set", "target", addr)
}

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

// Stats returns a snapshot of the connection counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Active = int64(len(p.links))
	return s
}

// Close stops the listener, closes all connections and waits for all of the
// proxy's goroutines to exit. Calls after the first return ErrClosed.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.closed = true
	links := p.detachAllLocked()
	p.mu.Unlock()

	p.cancel()
	err := p.ln.Close()
	closeConns(links)
	p.wg.Wait()
	p.log.Info("faultproxy: closed")
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("faultproxy: close listener: %w", err)
	}
	return nil
}

// detachAllLocked marks every link closed, removes it from the set and wakes
// waiters. The caller closes the connections after unlocking.
func (p *Proxy) detachAllLocked() []*link {
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		p.markClosedLocked(l)
		links = append(links, l)
	}
	clear(p.links)
	p.gen++
	p.cond.Broadcast()
	return links
}

func (p *Proxy) markClosedLocked(l *link) {
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	delete(p.links, l)
}

func closeConns(links []*link) {
	for _, l := range links {
		l.client.Close()
		l.upstream.Close()
	}
}

// holdLocked reports whether the direction towards the server (toServer)
// or towards the client must not be read now.
func (p *Proxy) holdLocked(toServer bool) bool {
	return p.blackholed || (toServer && p.stalled)
}

// closeLink closes one link after either side ended or failed.
func (p *Proxy) closeLink(l *link) {
	p.mu.Lock()
	p.markClosedLocked(l)
	p.cond.Broadcast()
	p.mu.Unlock()
	l.client.Close()
	l.upstream.Close()
}

// refusingLocked reports whether new connections are refused now.
func (p *Proxy) refusingLocked(now time.Time) bool {
	if p.blackholed {
		return true
	}
	if !p.partitioned {
		return false
	}
	if !p.partitionUntil.IsZero() && !now.Before(p.partitionUntil) {
		p.partitioned = false
		return false
	}
	return true
}

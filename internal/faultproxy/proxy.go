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
	stalledBack    bool // server→client: not read (StallReplies)
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
	return p.blackholed || (toServer && p.stalled) || (!toServer && p.stalledBack)
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

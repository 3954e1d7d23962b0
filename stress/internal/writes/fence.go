// Package writes is the stress run's guarded resources: what the workers
// write to while they hold a lock, in a run with faults, so that the
// checker can tell whether a stale holder's write ever landed after a
// later holder's (exclusion.CheckWrites). There are two, one per way a
// holder can be stopped from writing once its lock has passed on:
//
//   - guarded nodes (guard.go), one per lock path, written through the
//     lock's guarded transaction (tier.Lock.Txn, zklock.Hold.Txn): the
//     server applies the write only while the hold's node exists. Each
//     write sets the node's data and creates a persistent sequential child
//     named after the hold's token and process in the same multi, so the
//     children's sequence numbers are the order the server applied the
//     writes in; the parent collects and deletes the children as the run
//     goes (Collector).
//   - a fenced store (fence.go): a server in the parent that admits a write
//     only if its token is no lower than the highest it admitted for that
//     path (fence.Keyed) and logs the writes it admitted, in order. The
//     workers reach it over a Unix socket (Client).
//
// The worker side (Ops, Client) and the parent side (Collector, Server)
// share this package and nothing else.
package writes

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/fence"
	"github.com/tierlock/tierlock/internal/exclusion"
)

// Refusal is a write the fenced store refused: a later holder's token had
// been admitted (High).
type Refusal struct {
	exclusion.Write
	High int64 `json:"high"`
}

// Server is the fenced store: one fence per lock path.
type Server struct {
	ln       net.Listener
	fence    fence.Keyed[int32]
	unfenced atomic.Bool // the fence is off: every write is admitted (a self-test)
	highs    sync.Map    // path: *atomic.Int64, the highest token logged

	mu      sync.Mutex
	log     []exclusion.Write // admitted, in the order they were admitted
	refused []Refusal
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// Listen starts a fenced store on the Unix socket at path.
func Listen(path string) (*Server, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("fenced store: %w", err)
	}
	s := &Server{ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the socket's path, for the workers' Dial.
func (s *Server) Addr() string { return s.ln.Addr().String() }

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

// serve answers one worker connection: a request a line, "W path token
// proc g"; the answer "A" (admitted), "R high" (refused: stale) or "E
// error".
func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		var answer string
		w, err := parseRequest(line)
		if err == nil {
			answer = s.write(w)
		} else {
			answer = "E " + err.Error()
		}
		if _, err := c.Write([]byte(answer + "\n")); err != nil {
			return
		}
	}
}

func parseRequest(line string) (exclusion.Write, error) {
	f := strings.Fields(line)
	if len(f) != 5 || f[0] != "W" {
		return exclusion.Write{}, fmt.Errorf("bad request %q", strings.TrimSpace(line))
	}
	var n [4]int64
	for i, s := range f[1:] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return exclusion.Write{}, fmt.Errorf("bad request %q", strings.TrimSpace(line))
		}
		n[i] = v
	}
	return exclusion.Write{Path: int32(n[0]), Token: n[1], Proc: int32(n[2]), G: int32(n[3])}, nil
}

// Unfence turns the fence off: from then on every write with a valid
// token is admitted and logged, stale or not. It is the store's self-test,
// as nolock is the locks': a run whose paused holder writes on waking must
// then fail the check of stale writes (the stress command does this when
// $TIERLOCK_STRESS_UNFENCED is 1).
func (s *Server) Unfence() { s.unfenced.Store(true) }

// write admits w through its path's fence and logs it, or refuses it.
func (s *Server) write(w exclusion.Write) string {
	logIt := func() error {
		// Inside the fence: no higher token of the path can be admitted
		// until this write is logged, so the log's order is the fence's.
		w.At = exclusion.Now()
		s.mu.Lock()
		w.Seq = int64(len(s.log))
		s.log = append(s.log, w)
		s.mu.Unlock()
		h, _ := s.highs.LoadOrStore(w.Path, new(atomic.Int64))
		for high := h.(*atomic.Int64); ; {
			old := high.Load()
			if w.Token <= old || high.CompareAndSwap(old, w.Token) {
				break
			}
		}
		return nil
	}
	var err error
	if s.unfenced.Load() {
		if w.Token <= 0 {
			return "E invalid token"
		}
		err = logIt()
	} else {
		err = s.fence.Do(w.Path, w.Token, logIt)
	}
	switch {
	case err == nil:
		return "A"
	case errors.Is(err, fence.ErrStaleToken):
		high := s.fence.High(w.Path)
		w.At = exclusion.Now()
		s.mu.Lock()
		s.refused = append(s.refused, Refusal{Write: w, High: high})
		s.mu.Unlock()
		return fmt.Sprintf("R %d", high)
	}
	return "E " + err.Error()
}

// High is the highest token admitted for path, 0 if none.
func (s *Server) High(path int32) int64 {
	if h, ok := s.highs.Load(path); ok {
		return h.(*atomic.Int64).Load()
	}
	return 0
}

// Admitted returns the writes admitted so far, in the order they landed.
func (s *Server) Admitted() []exclusion.Write {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]exclusion.Write(nil), s.log...)
}

// Refused returns the writes refused so far.
func (s *Server) Refused() []Refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Refusal(nil), s.refused...)
}

// Close stops the store and waits for its connections to end.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

// Client is a worker's handle on the fenced store, safe for concurrent
// use: each write takes an idle connection or dials a new one.
type Client struct {
	addr string
	mu   sync.Mutex
	idle []net.Conn
}

// Dial returns a client of the store at addr (nothing is dialed yet).
func Dial(addr string) *Client { return &Client{addr: addr} }

// Timeout bounds one write to the store.
const Timeout = 10 * time.Second

// ErrStale reports a write the store refused: a higher token had been
// admitted for the path.
var ErrStale = errors.New("fenced store: stale token")

// Write asks the store to apply a write of goroutine g of process proc,
// holding path with token. It returns nil when the write was admitted, an
// error wrapping ErrStale when it was refused (high: the highest token
// admitted), or another error when the store could not be asked.
func (c *Client) Write(path int32, token int64, proc, g int32) (high int64, err error) {
	conn, err := c.get()
	if err != nil {
		return 0, err
	}
	answer, err := roundTrip(conn, fmt.Sprintf("W %d %d %d %d\n", path, token, proc, g))
	if err != nil {
		conn.Close()
		return 0, fmt.Errorf("fenced store: %w", err)
	}
	c.put(conn)
	switch {
	case answer == "A":
		return 0, nil
	case strings.HasPrefix(answer, "R "):
		high, _ = strconv.ParseInt(answer[2:], 10, 64)
		return high, fmt.Errorf("%w: %d is below %d", ErrStale, token, high)
	}
	return 0, fmt.Errorf("fenced store: %s", answer)
}

func roundTrip(conn net.Conn, req string) (string, error) {
	if err := conn.SetDeadline(time.Now().Add(Timeout)); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte(req)); err != nil {
		return "", err
	}
	// One answer per request, and the connection is used by one write at
	// a time: nothing is buffered past the answer.
	var b []byte
	buf := make([]byte, 64)
	for {
		n, err := conn.Read(buf)
		b = append(b, buf[:n]...)
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			return string(b[:i]), nil
		}
		if err != nil {
			return "", err
		}
	}
}

func (c *Client) get() (net.Conn, error) {
	c.mu.Lock()
	if n := len(c.idle); n > 0 {
		conn := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return conn, nil
	}
	c.mu.Unlock()
	conn, err := net.DialTimeout("unix", c.addr, Timeout)
	if err != nil {
		return nil, fmt.Errorf("fenced store: %w", err)
	}
	return conn, nil
}

func (c *Client) put(conn net.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle = append(c.idle, conn)
}

// Close closes the idle connections.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.idle {
		conn.Close()
	}
	c.idle = nil
}

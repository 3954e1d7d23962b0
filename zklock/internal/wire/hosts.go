package wire

import (
	"errors"
	"slices"
	"sync"
)

// hosts is go-zookeeper's DNSHostProvider without the resolution: the
// servers in the order given (zk.Connect shuffles them first), each
// once, resolved when dialed. A server named twice is one server: Refused
// waits for the refusals of as many servers as there are (Len).
type hosts struct {
	mu         sync.Mutex
	servers    []string
	curr, last int
}

func (h *hosts) Init(servers []string) error {
	if len(servers) == 0 {
		return errors.New("wire: no servers")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers = make([]string, 0, len(servers))
	for _, s := range servers {
		if !slices.Contains(h.servers, s) {
			h.servers = append(h.servers, s)
		}
	}
	h.curr, h.last = -1, -1
	return nil
}

func (h *hosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Next returns the next server; retryStart is true once every server was
// tried since the last connection (go-zookeeper then waits a second).
func (h *hosts) Next() (server string, retryStart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart = h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

func (h *hosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}

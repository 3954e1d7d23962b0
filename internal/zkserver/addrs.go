package zkserver

import (
	"fmt"
	"net"
	"strconv"
)

// The members' ports and addresses.

// Size reports the number of members (external servers included).
func (c *Cluster) Size() int {
	if c.external != nil {
		return len(c.external)
	}
	return len(c.members)
}

// External reports whether the cluster points at servers it did not start.
func (c *Cluster) External() bool { return c.external != nil }

// Addr returns the client address of member i.
func (c *Cluster) Addr(i int) string {
	if c.external != nil {
		return c.external[i]
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.members[i].clientPort))
}

// Addrs returns the client addresses of every member.
func (c *Cluster) Addrs() []string {
	out := make([]string, c.Size())
	for i := range out {
		out[i] = c.Addr(i)
	}
	return out
}

// Dir returns the directory holding the members' data and logs.
func (c *Cluster) Dir() string { return c.cfg.dir }

func (c *Cluster) check(i int) error {
	if i < 0 || i >= c.Size() {
		return fmt.Errorf("%w: %d", ErrBadMember, i)
	}
	return nil
}

// freePorts reserves n distinct free TCP ports on 127.0.0.1 by listening on
// them at once, then releases them for the server to bind.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("zkserver: free port: %w", err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// SecureAddr returns the secure client address of member i (WithTLS), or
// "" when it serves none.
func (c *Cluster) SecureAddr(i int) string {
	if c.external != nil || c.cfg.tls == nil {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.members[i].securePort))
}

// SecureAddrs returns the secure client addresses of every member.
func (c *Cluster) SecureAddrs() []string {
	out := make([]string, c.Size())
	for i := range out {
		out[i] = c.SecureAddr(i)
	}
	return out
}

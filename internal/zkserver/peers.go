package zkserver

import (
	"fmt"
	"net"
	"strconv"

	"github.com/tierlock/tierlock/internal/faultproxy"
)

// WithPeerProxies puts a fault proxy (internal/faultproxy) on every
// server-to-server connection of an ensemble, so that a test can cut one
// member from its peers while its clients stay connected to it
// ([Cluster.PartitionMember]).
//
// Each member gets its own configuration: its own quorum and election
// ports are the real ones, and each peer's are the addresses of proxies
// that forward to that peer's real ports, one proxy per member, peer and
// port. ZooKeeper drops an election connection opened by a server with a
// lower id and dials back to the address the lower server advertises (its
// real port, past any proxy); so a lower member's proxies to the election
// port of a higher one refuse every connection, the higher member always
// dials, and every server-to-server connection passes exactly one proxy.
// Learners dial the leader's quorum port through their own proxy.
//
// It has no effect on a standalone server.
func WithPeerProxies() Option { return func(c *config) { c.peerProxies = true } }

// Port kinds of a PeerLink.
const (
	QuorumPort   = "quorum"   // a learner's connection to the leader
	ElectionPort = "election" // leader election
)

// PeerLink is one proxy of an ensemble started WithPeerProxies: it carries
// the connections that member From opens to member To's Port.
type PeerLink struct {
	From, To int    // member indexes
	Port     string // QuorumPort or ElectionPort
	// Refusing marks the proxy from a lower member id to a higher one's
	// election port, which refuses every connection (see WithPeerProxies);
	// PartitionMember and HealMember leave it alone.
	Refusing bool
	Proxy    *faultproxy.Proxy
}

func (l *PeerLink) String() string {
	s := fmt.Sprintf("member %d -> member %d %s port via %s", l.From, l.To, l.Port, l.Proxy.Addr())
	if l.Refusing {
		s += " (refusing)"
	}
	return s
}

// makePeerLinks (re)creates the proxies for the members' current ports.
func (c *Cluster) makePeerLinks() error {
	c.closePeerLinks()
	if !c.cfg.peerProxies || len(c.members) < 2 {
		return nil
	}
	opts := []faultproxy.Option{faultproxy.WithLogger(c.cfg.logger)}
	for _, from := range c.members {
		for j, to := range c.members {
			if from == to {
				continue
			}
			for _, port := range []string{QuorumPort, ElectionPort} {
				target := to.peerPort
				if port == ElectionPort {
					target = to.electPort
				}
				px, err := faultproxy.New(net.JoinHostPort("127.0.0.1", strconv.Itoa(target)), opts...)
				if err != nil {
					c.closePeerLinks()
					return fmt.Errorf("zkserver: peer proxy: %w", err)
				}
				l := &PeerLink{From: from.id - 1, To: j, Port: port, Proxy: px}
				if port == ElectionPort && from.id < to.id {
					l.Refusing = true
					px.Partition(0)
				}
				c.links = append(c.links, l)
			}
		}
	}
	return nil
}

func (c *Cluster) closePeerLinks() {
	for _, l := range c.links {
		l.Proxy.Close()
	}
	c.links = nil
}

// peerAddrs is the "host:quorum:election" of member o in member m's
// configuration: o's real ports for m itself or without peer proxies, else
// the addresses of m's proxies to o.
func (c *Cluster) peerAddrs(m, o *member) string {
	q, e := o.peerPort, o.electPort
	if len(c.links) > 0 && m != o {
		for _, l := range c.links {
			if l.From != m.id-1 || l.To != o.id-1 {
				continue
			}
			_, port, _ := net.SplitHostPort(l.Proxy.Addr())
			p, _ := strconv.Atoi(port)
			if l.Port == QuorumPort {
				q = p
			} else {
				e = p
			}
		}
	}
	return fmt.Sprintf("127.0.0.1:%d:%d", q, e)
}

// PeerLinks returns the proxies of an ensemble started WithPeerProxies
// (nil otherwise), refusing ones included.
func (c *Cluster) PeerLinks() []*PeerLink { return append([]*PeerLink(nil), c.links...) }

// PeerProxy returns the proxy that carries member from's connections to
// member to's port (QuorumPort or ElectionPort), or nil.
func (c *Cluster) PeerProxy(from, to int, port string) *faultproxy.Proxy {
	for _, l := range c.links {
		if l.From == from && l.To == to && l.Port == port {
			return l.Proxy
		}
	}
	return nil
}

// openElectionFrom lets member i's election connections to higher members
// through, until the returned function closes them again. A member that
// (re)joins a running ensemble must hear from the leader, and a leader with
// a higher id talks to it only after it dropped a connection from it and
// dialed back (directly, to the member's real port): with those proxies
// refusing, a restarted member whose id is below the leader's would look
// for a leader for ever. The dial-back bypasses the proxies, but only for
// election traffic; a follower's link to the leader (the quorum port)
// still passes its proxy, which is what PartitionMember cuts.
func (c *Cluster) openElectionFrom(i int) (restore func()) {
	var opened []*PeerLink
	for _, l := range c.links {
		if l.Refusing && l.From == i {
			l.Proxy.Heal()
			opened = append(opened, l)
		}
	}
	return func() {
		for _, l := range opened {
			l.Proxy.Partition(0)
		}
	}
}

// closeElectionFrom has member i's proxies to the election ports of
// higher members refuse again (after HealMember opened them).
func (c *Cluster) closeElectionFrom(i int) {
	for _, l := range c.links {
		if l.Refusing && l.From == i {
			l.Proxy.Partition(0)
		}
	}
}

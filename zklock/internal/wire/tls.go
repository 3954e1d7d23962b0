package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/go-zookeeper/zk"
)

// TLS: a session's connections to a secure client port (ZooKeeper 3.5+,
// served by Netty). The TLS connection is made on the dialed socket and
// tapped above it, so that the tap sees the plaintext requests. Servers
// that refuse this side in a way that trying again will not change are
// told at once (Refused); with TLS, go-zookeeper takes its servers from
// hosts (hosts.go), which keeps the names the caller gave.

// HandshakeTimeout bounds a TLS handshake. go-zookeeper's dial timeout,
// one second, is for a TCP connect; the handshake also waits for the
// server's crypto, and the first one of a JVM that has just started took
// 0.87 s on an idle machine here.
const HandshakeTimeout = 5 * time.Second

// secure makes the TLS connection on c, dialed to address, with t's
// configuration. Without a ServerName the host of address is verified
// (as tls.Dial does): go-zookeeper's default host provider dials
// resolved IP addresses, so Connect gives a TLS session hosts, which
// keeps the names the caller gave.
func (t *Tap) secure(c net.Conn, address string) (net.Conn, error) {
	cfg := t.tls
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			host = address
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	ctx, cancel := context.WithTimeout(context.Background(), HandshakeTimeout)
	defer cancel()
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("TLS handshake with %s: %w (the server closed the connection: is this its secure client port?)", address, err)
		}
		return nil, fmt.Errorf("TLS handshake with %s: %w", address, err)
	}
	return tc, nil
}

// refusal reports whether err is a TLS refusal that trying again will
// not change: this side does not trust the server's certificate, the port
// does not speak TLS, or the server sent an alert in the handshake (it
// refuses this side's certificate or the lack of one, or they share no
// protocol or cipher). crypto/tls hands a server's alert over as a
// *net.OpError "remote error" around an unexported type; only "internal
// error", the server's own failure, may pass.
func refusal(err error) bool {
	var verify *tls.CertificateVerificationError
	var header tls.RecordHeaderError
	var remote *net.OpError
	var plain *PlainToTLSError
	switch {
	case errors.As(err, &verify), errors.As(err, &header), errors.As(err, &plain):
		return true
	case errors.As(err, &remote) && remote.Op == "remote error":
		return remote.Err == nil || remote.Err.Error() != "tls: internal error"
	}
	return false
}

// PlainToTLSError reports a server that closed a plain connection before
// answering its connect request, and answers a TLS handshake: a secure
// client port, which this side does not speak TLS to.
type PlainToTLSError struct{ Address string }

func (e *PlainToTLSError) Error() string {
	return e.Address + " closed the connection before answering and speaks TLS: is this its secure client port? (connect with TLS: zklock.WithTLS, tierlock's -tls flags)"
}

// probeBound bounds the handshake that asks a port whether it speaks TLS.
const probeBound = 2 * time.Second

// probeTLS is called when a plain connection to address ended before any
// byte of the connect response: a server that is not serving (no quorum)
// does that, and so does a secure client port, which reads the connect
// request as a TLS record it cannot parse. Before the session's first
// connection, once per address, a second connection asks in a TLS
// handshake, and a server that answers in TLS counts as refusing (so
// Connect fails at once, saying why, instead of at its deadline). The
// handshake verifies nothing and sends nothing over the connection: all it
// learns is whether the port speaks TLS.
func (t *Tap) probeTLS(address string) {
	r := &t.refused
	r.mu.Lock()
	if r.reached || r.probed[address] {
		r.mu.Unlock()
		return
	}
	if r.probed == nil {
		r.probed = make(map[string]bool)
	}
	r.probed[address] = true
	r.mu.Unlock()
	dial := t.dial
	if dial == nil {
		dial = net.DialTimeout
	}
	c, err := dial("tcp", address, probeBound)
	if err != nil {
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), probeBound)
	defer cancel()
	err = tls.Client(c, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}).HandshakeContext(ctx) //nolint:gosec // learns only whether the port speaks TLS
	var remote *net.OpError
	if err == nil || (errors.As(err, &remote) && remote.Op == "remote error") {
		t.noteRefusal(address, &PlainToTLSError{Address: address})
	}
}

// Refused is closed when, since the last connection that reached a
// session, every server has refused this side in a way that trying again
// will not change (see refusal); RefusedErr then says why.
func (t *Tap) Refused() <-chan struct{} { return t.refused.all }

// RefusedErr returns the last refusal (see Refused), nil before one.
func (t *Tap) RefusedErr() error {
	t.refused.mu.Lock()
	defer t.refused.mu.Unlock()
	return t.refused.last
}

// noteRefusal records address's error if it is a refusal.
func (t *Tap) noteRefusal(address string, err error) {
	servers := t.servers()
	if servers == nil || !refusal(err) {
		return
	}
	r := &t.refused
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = make(map[string]bool)
	}
	r.by[address], r.last = true, err
	if len(r.by) >= servers.Len() && !r.closed {
		r.closed = true
		close(r.all)
	}
}

// sessionReached forgets the refusals: a server took this side.
func (t *Tap) sessionReached() {
	r := &t.refused
	r.mu.Lock()
	clear(r.by)
	r.reached = true
	r.mu.Unlock()
}

// HostProvider returns what go-zookeeper takes its servers from: its
// default (which resolves names once and dials IP addresses) without TLS,
// and hosts with TLS, so that a certificate is checked against the name
// the caller gave. It is called once, before the first dial.
func (t *Tap) HostProvider() zk.HostProvider {
	if t.hosts == nil {
		p := zk.NewDNSHostProvider()
		t.provider.Store(p)
		return p
	}
	return t.hosts
}

// servers is the host provider go-zookeeper dials from (its count of
// addresses is what every server refusing means); nil before
// HostProvider.
func (t *Tap) servers() interface{ Len() int } {
	if t.hosts != nil {
		return t.hosts
	}
	if p := t.provider.Load(); p != nil {
		return p
	}
	return nil
}

// Package fourlw asks ZooKeeper servers their four-letter words (cons,
// conf), for what a client cannot learn through its own session: which
// sessions have a connection to some server of the ensemble. The
// inspector's ls marks a holder whose session has none; package zklock
// says which waits stand behind one.
//
// ZooKeeper 3.5+ answers only the words listed in its
// 4lw.commands.whitelist (3.8's default: srvr alone); a word outside it is
// answered with a sentence, which Ask returns as ErrRefused.
package fourlw

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrRefused is the error of a word the server does not allow: it is not
// in the server's 4lw.commands.whitelist.
var ErrRefused = errors.New("four-letter word not in the server's 4lw.commands.whitelist")

// ErrUnlisted is the error of AskConnections when the servers asked are
// fewer than the ensemble's members: a session may be connected to one
// not asked.
var ErrUnlisted = errors.New("the servers given are fewer than the ensemble's members")

// Options say how to reach the servers.
type Options struct {
	TLS     *tls.Config   // nil: plaintext
	Timeout time.Duration // per word; 0: 2 s
	// Dial opens a connection (zk.Dialer's shape: a proxy's, say); nil:
	// net.Dialer.
	Dial func(network, address string, timeout time.Duration) (net.Conn, error)
}

// Ask sends word to server (host:port; no port: 2181), over TLS when
// o.TLS is set, and returns the answer, read until the server closes; a
// refused word's answer is ErrRefused.
func Ask(ctx context.Context, server, word string, o Options) (string, error) {
	if _, _, err := net.SplitHostPort(server); err != nil {
		server = net.JoinHostPort(server, "2181")
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := dial(ctx, server, o, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if cfg := o.TLS; cfg != nil {
		host, _, _ := net.SplitHostPort(server)
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return "", err
		}
		conn = tc
	}
	if _, err := io.WriteString(conn, word); err != nil {
		return "", err
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		return string(out), err
	}
	if strings.Contains(string(out), "is not executed because it is not in the whitelist") {
		return string(out), fmt.Errorf("%s to %s: %w", word, server, ErrRefused)
	}
	return string(out), nil
}

// dial opens the connection Ask speaks on.
func dial(ctx context.Context, server string, o Options, timeout time.Duration) (net.Conn, error) {
	if o.Dial != nil {
		return o.Dial("tcp", server, timeout)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", server)
}

// Connections is what the servers said of their connections.
type Connections struct {
	// Sessions are the sessions some server lists among its connections.
	Sessions map[int64]bool
	// MaxSessionTimeout is the first server's maxSessionTimeout (conf):
	// no session of it lives longer than this past its last contact; 0
	// when not said.
	MaxSessionTimeout time.Duration
}

var sidRe = regexp.MustCompile(`sid=0x([0-9a-f]+)`)

// AskConnections asks every server for its connections (cons) and the first
// for the ensemble's members (conf): one connection per server, and one
// more. It fails with ErrRefused when a server does not allow a word, and
// with ErrUnlisted when the ensemble has members that servers does not
// name, since their connections are not known.
func AskConnections(ctx context.Context, servers []string, o Options) (Connections, error) {
	var c Connections
	if len(servers) == 0 {
		return c, ErrUnlisted
	}
	conf, err := Ask(ctx, servers[0], "conf", o)
	if err != nil {
		return c, err
	}
	if !strings.Contains(conf, "dataDir=") {
		return c, fmt.Errorf("conf to %s: an answer without dataDir: %q", servers[0], firstLine(conf))
	}
	members := 0
	for _, line := range strings.Split(conf, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "server.") {
			members++ // an ensemble's; a standalone server lists none
		}
		if v, ok := strings.CutPrefix(line, "maxSessionTimeout="); ok {
			if ms, err := strconv.Atoi(v); err == nil {
				c.MaxSessionTimeout = time.Duration(ms) * time.Millisecond
			}
		}
	}
	if members > len(servers) {
		return c, ErrUnlisted
	}
	c.Sessions = map[int64]bool{}
	for _, s := range servers {
		out, err := Ask(ctx, s, "cons", o)
		if err != nil {
			return c, err
		}
		if !strings.Contains(out, "queued=") {
			return c, fmt.Errorf("cons to %s: an answer without connections: %q", s, firstLine(out))
		}
		for _, m := range sidRe.FindAllStringSubmatch(out, -1) {
			if id, err := strconv.ParseUint(m[1], 16, 64); err == nil {
				c.Sessions[int64(id)] = true
			}
		}
	}
	return c, nil
}

// firstLine is s's first line, cut at 100 bytes, for an error.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 100 {
		s = s[:100]
	}
	return s
}

package main

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Which sessions have a connection: a node's session outlives its process
// until the server expires it (its timeout after the process last spoke,
// counted again from a server's restart), and meanwhile its nodes hold and
// wait as a live one's do. ls marks the nodes of a session that no server
// lists among its connections (four-letter word cons): its process may be
// gone, and its nodes go when the session expires, unless it reconnects.

// sessionsKnown are the sessions connected to some server, as every
// server of the ensemble listed them; nil when that is not known (a server
// did not answer, or does not allow cons or conf, or -zk does not name
// every member).
type sessionsKnown map[int64]bool

var sidRe = regexp.MustCompile(`sid=0x([0-9a-f]+)`)

// connectedSessions asks every server of -zk for its connections (cons)
// and the first for the ensemble's members (conf), within -timeout.
// Cost: one connection per server, and one more.
func (c *cli) connectedSessions(ctx context.Context) sessionsKnown {
	hosts, _ := splitChroot(c.servers)
	servers := strings.Split(hosts, ",")
	cfg, err := c.tls.config()
	if err != nil {
		return nil
	}
	conf, err := fourLetter(ctx, servers[0], "conf", cfg, c.timeout)
	if err != nil || !strings.Contains(conf, "dataDir=") {
		return nil // refused, or "conf is not executed because it is not in the whitelist."
	}
	members := 0
	for _, line := range strings.Split(conf, "\n") {
		if strings.HasPrefix(line, "server.") {
			members++ // an ensemble's; a standalone server lists none
		}
	}
	if members > len(servers) {
		return nil // cons of the others is not known
	}
	known := sessionsKnown{}
	for _, s := range servers {
		out, err := fourLetter(ctx, s, "cons", cfg, c.timeout)
		if err != nil || !strings.Contains(out, "queued=") {
			return nil // refused, or "cons is not executed because it is not in the whitelist."
		}
		for _, m := range sidRe.FindAllStringSubmatch(out, -1) {
			if id, err := strconv.ParseUint(m[1], 16, 64); err == nil {
				known[int64(id)] = true
			}
		}
	}
	return known
}

// fourLetter sends word to server (host:port; no port: 2181), over TLS
// when cfg is set, and returns the answer, read until the server closes.
func fourLetter(ctx context.Context, server, word string, cfg *tls.Config, timeout time.Duration) (string, error) {
	if _, _, err := net.SplitHostPort(server); err != nil {
		server = net.JoinHostPort(server, "2181")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", server)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if cfg != nil {
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
	return string(out), err
}

// mark notes, in each node of qs, whether its session is connected, when
// that is known.
func (k sessionsKnown) mark(qs []queueView) {
	if k == nil {
		return
	}
	for i := range qs {
		for j := range qs[i].Nodes {
			v := &qs[i].Nodes[j]
			id, err := strconv.ParseUint(strings.TrimPrefix(v.Session, "0x"), 16, 64)
			if err == nil {
				connected := k[int64(id)]
				v.Connected = &connected
			}
		}
	}
}

// disconnected reports whether v's session is known to have no connection.
func (v *nodeView) disconnected() bool { return v != nil && v.Connected != nil && !*v.Connected }

// noConnection marks a holder whose session has no connection, in the
// table of a root (first: a long HOLDER is cut at its end).
const noConnection = "[no connection] "

// legendNoConnection explains the mark, after the legend of a table that
// shows it.
const legendNoConnection = "[no connection] its session is connected to no server (cons): its process may be gone; its nodes stay until the session expires\n"

package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/tierlock/tierlock/internal/fourlw"
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

// connectedSessions asks every server of -zk for its connections (cons)
// and the first for the ensemble's members (conf), within -timeout each.
// Cost: one connection per server, and one more.
func (c *cli) connectedSessions(ctx context.Context) sessionsKnown {
	hosts, _ := splitChroot(c.servers)
	cfg, err := c.tls.config()
	if err != nil {
		return nil
	}
	known, err := fourlw.AskConnections(ctx, strings.Split(hosts, ","), fourlw.Options{TLS: cfg, Timeout: c.timeout})
	if err != nil {
		return nil // refused ("cons is not executed because it is not in the whitelist."), or not every member named
	}
	return known.Sessions
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

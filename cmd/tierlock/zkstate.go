package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// What watch says of its own connection: a line when it loses ZooKeeper
// and one when it is back, so that a table that stopped changing is not
// read as idle locks. The session tells the state changes on a goroutine
// of its own (zklock.WithStateListener); the watch's listings are printed
// on the main goroutine; mu orders the two, so lines never interleave,
// and a listing read after the connection came back is printed after the
// line that says so (printing it first would show a change "before" the
// line).
type zkState struct {
	mu     sync.Mutex // held for every line of the watch's output
	s      *zklock.Session
	lostAt time.Time // when the connection was lost; zero while connected
	lostIn int64     // the session then
}

// listen is the session's state listener: a lost connection (or an
// expiry) begins an outage, a connection ends it.
func (c *cli) listen(st zklock.State) {
	z := &c.zk
	z.mu.Lock()
	defer z.mu.Unlock()
	switch st {
	case zklock.StateDisconnected, zklock.StateExpired:
		if z.s != nil && z.lostAt.IsZero() {
			z.lostAt, z.lostIn = time.Now(), z.s.SessionID()
			c.tellLost(z.lostAt)
		}
	case zklock.StateConnected:
		c.tellBack()
	}
}

// watching starts the lines for the watch on s (connected).
func (c *cli) watching(s *zklock.Session) {
	c.zk.mu.Lock()
	c.zk.s = s
	c.zk.mu.Unlock()
}

// printing runs print, a piece of the watch's output, after the line that
// says ZooKeeper is back if it is and none said so yet.
func (c *cli) printing(print func() error) error {
	z := &c.zk
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.s != nil && z.s.State() == zklock.StateConnected {
		c.tellBack()
	}
	return print()
}

func (c *cli) tellLost(at time.Time) {
	if c.json {
		_ = printJSON(c.stdout, struct {
			Time  time.Time `json:"time"`
			Event string    `json:"event"`
		}{at, "disconnected"})
		return
	}
	fmt.Fprintf(c.stdout, "%s  lost the connection to ZooKeeper: what is shown above is as of then, until it is back\n", timeText(at))
}

// tellBack ends the outage under way, if any (z.mu held).
func (c *cli) tellBack() {
	z := &c.zk
	if z.lostAt.IsZero() {
		return
	}
	now := time.Now()
	d, renewed := now.Sub(z.lostAt), z.s.SessionID() != z.lostIn
	z.lostAt = time.Time{}
	if c.json {
		_ = printJSON(c.stdout, struct {
			Time          time.Time `json:"time"`
			Event         string    `json:"event"`
			OutageSeconds float64   `json:"outage_seconds"`
			NewSession    bool      `json:"new_session"`
		}{now, "reconnected", d.Seconds(), renewed})
		return
	}
	how := "in the same session: a change made meanwhile is shown next"
	if renewed {
		how = "in a new session (the old one expired): the watches are set again, and a change made meanwhile is shown next"
	}
	fmt.Fprintf(c.stdout, "%s  connected to ZooKeeper again after %v, %s\n", timeText(now), d.Round(time.Millisecond), how)
}

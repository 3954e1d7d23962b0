package zkserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// FourLetter sends a four-letter word (ruok, srvr, mntr, wchc, cons ...) to
// member i and returns the answer.
func (c *Cluster) FourLetter(ctx context.Context, i int, word string) (string, error) {
	if err := c.check(i); err != nil {
		return "", err
	}
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", c.Addr(i))
	if err != nil {
		return "", fmt.Errorf("zkserver: %s to member %d: %w", word, i, err)
	}
	defer conn.Close()
	deadline, _ := dctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := io.WriteString(conn, word); err != nil {
		return "", fmt.Errorf("zkserver: %s to member %d: %w", word, i, err)
	}
	out, err := io.ReadAll(conn)
	if err != nil && len(out) == 0 {
		return "", fmt.Errorf("zkserver: %s to member %d: %w", word, i, err)
	}
	return string(out), nil
}

// Mode returns member i's mode as srvr reports it: "standalone", "leader"
// or "follower"; "" with an error when it does not serve.
func (c *Cluster) Mode(ctx context.Context, i int) (string, error) {
	out, err := c.FourLetter(ctx, i, "srvr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("zkserver: member %d not serving: %q", i, strings.TrimSpace(out))
}

// Leader returns the index of the member that leads (0 for a standalone
// server).
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	for i := 0; i < c.Size(); i++ {
		mode, err := c.Mode(ctx, i)
		if err == nil && (mode == "leader" || mode == "standalone") {
			return i, nil
		}
	}
	return -1, ErrNoLeader
}

// Mntr returns member i's monitoring counters (the mntr four-letter word)
// as a map from name (zk_packets_received, zk_znode_count, zk_watch_count
// ...) to value.
func (c *Cluster) Mntr(ctx context.Context, i int) (map[string]string, error) {
	out, err := c.FourLetter(ctx, i, "mntr")
	if err != nil {
		return nil, err
	}
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "\t"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("zkserver: mntr from member %d: %q", i, strings.TrimSpace(out))
	}
	return m, nil
}

// Counters are server counters summed over the serving members.
type Counters struct {
	PacketsReceived int64 // requests received, pings included
	ZnodeCount      int64 // largest znode count among members
	WatchCount      int64 // watches registered, summed over members
}

// Counters reads mntr from every serving member.
func (c *Cluster) Counters(ctx context.Context) (Counters, error) {
	var out Counters
	var served bool
	var last error
	for i := 0; i < c.Size(); i++ {
		m, err := c.Mntr(ctx, i)
		if err != nil {
			last = err
			continue
		}
		served = true
		out.PacketsReceived += atoi(m["zk_packets_received"])
		out.WatchCount += atoi(m["zk_watch_count"])
		out.ZnodeCount = max(out.ZnodeCount, atoi(m["zk_znode_count"]))
	}
	if !served {
		return out, last
	}
	return out, nil
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// Conf returns member i's configuration as the conf four-letter word
// reports it (tickTime, syncLimit, initLimit, ...), keyed by name.
func (c *Cluster) Conf(ctx context.Context, i int) (map[string]string, error) {
	out, err := c.FourLetter(ctx, i, "conf")
	if err != nil {
		return nil, err
	}
	m := make(map[string]string)
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			m[k] = v
		}
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("zkserver: conf from member %d: %q", i, strings.TrimSpace(out))
	}
	return m, nil
}

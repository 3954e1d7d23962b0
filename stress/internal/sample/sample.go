// Package sample counts, while a stress run goes on, the znodes under each
// lock path and the watches on them, and keeps the peaks.
package sample

import (
	"bufio"
	"context"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zkserver"
)

// Sampler counts, while a run goes on, the znodes under each lock path
// (children of the path, on the parent's own connection) and the watches
// on them (the wchp four-letter word of every server), and keeps the peaks.
type Sampler struct {
	conn    *zk.Conn
	cluster *zkserver.Cluster
	paths   []string
	period  time.Duration

	stop chan struct{}
	done chan struct{}

	mu          sync.Mutex
	peakZnodes  []int
	peakWatches []int // -1: the servers did not answer wchp
	requests    int64 // requests and four-letter words the sampler sent, to subtract
	samples     int
}

// Start starts sampling paths every period: children on conn, watches
// through the wchp four-letter word of every server of c.
func Start(conn *zk.Conn, c *zkserver.Cluster, paths []string, period time.Duration) *Sampler {
	s := &Sampler{
		conn: conn, cluster: c, paths: paths, period: period,
		stop: make(chan struct{}), done: make(chan struct{}),
		peakZnodes: make([]int, len(paths)), peakWatches: make([]int, len(paths)),
	}
	for i := range s.peakWatches {
		s.peakWatches[i] = -1
	}
	go s.loop()
	return s
}

func (s *Sampler) loop() {
	defer close(s.done)
	t := time.NewTicker(s.period)
	defer t.Stop()
	for {
		s.sample()
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

func (s *Sampler) sample() {
	znodes := make([]int, len(s.paths))
	for i, p := range s.paths {
		children, _, err := s.conn.Children(p)
		s.mu.Lock()
		s.requests++
		s.mu.Unlock()
		if err == nil {
			znodes[i] = len(children)
		}
	}
	watches := s.watches()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	for i := range s.paths {
		s.peakZnodes[i] = max(s.peakZnodes[i], znodes[i])
		if watches != nil {
			s.peakWatches[i] = max(s.peakWatches[i], watches[i])
		}
	}
}

// watches counts, per lock path, the watches set on the path or on nodes
// below it, summed over the servers; nil when no server answered.
func (s *Sampler) watches() []int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var out []int
	for m := 0; m < s.cluster.Size(); m++ {
		text, err := s.cluster.FourLetter(ctx, m, "wchp")
		s.mu.Lock()
		s.requests++ // the server counts a four-letter word as a packet
		s.mu.Unlock()
		if err != nil || !strings.HasPrefix(text, "/") && strings.TrimSpace(text) != "" {
			continue // not answered, or refused (not whitelisted)
		}
		if out == nil {
			out = make([]int, len(s.paths))
		}
		countWatches(text, s.paths, out)
	}
	return out
}

// countWatches parses wchp output (a watched path on a line, then one
// indented line per session watching it) and adds to counts[i] the watches
// on paths[i] and below it.
func countWatches(wchp string, paths []string, counts []int) {
	cur := -1
	sc := bufio.NewScanner(strings.NewReader(wchp))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		if line[0] == '/' {
			cur = -1
			for i, p := range paths {
				if line == p || strings.HasPrefix(line, p+"/") {
					cur = i
					break
				}
			}
			continue
		}
		if cur >= 0 {
			counts[cur]++
		}
	}
}

// Finish stops sampling and returns the peaks and
// the number of requests the sampler sent.
func (s *Sampler) Finish() (peakZnodes, peakWatches []int, requests int64) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakZnodes, s.peakWatches, s.requests
}

// Requests is the number of requests and four-letter words the sampler
// has sent so far: a run reads it at the edges of its measured window, to
// subtract what fell inside.
func (s *Sampler) Requests() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

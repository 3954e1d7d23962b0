package writes

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/exclusion"
)

// GuardBase is where the guarded nodes of a run whose lock paths are below
// base live: GuardBase(base)/lock-<i> guards base/lock-<i>.
func GuardBase(base string) string { return base + "/guarded" }

// childPrefix starts the name of a write's child; the rest is
// "<token>-<proc>-<g>-" and the server's 10-digit sequence number.
const childPrefix = "w-"

// Ops are the ops of one guarded write of goroutine g of process proc,
// holding the lock that guard guards with token: the guarded node's data
// set to the token, and a sequential child named after the write, applied
// together (the lock puts its own check in front). The child's sequence
// number is the order in which the server applied the write.
func Ops(guard string, token int64, proc, g int32) []any {
	return []any{
		&zk.SetDataRequest{Path: guard, Data: []byte(fmt.Sprintf("%d %d %d", token, proc, g)), Version: -1},
		&zk.CreateRequest{Path: fmt.Sprintf("%s/%s%d-%d-%d-", guard, childPrefix, token, proc, g),
			Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagSequence},
	}
}

// parseChild reads a write's child name.
func parseChild(name string) (w exclusion.Write, ok bool) {
	rest, found := strings.CutPrefix(name, childPrefix)
	if !found || len(rest) < 11 {
		return w, false
	}
	seq, err := strconv.ParseInt(rest[len(rest)-10:], 10, 64)
	if err != nil {
		return w, false
	}
	f := strings.Split(strings.TrimSuffix(rest[:len(rest)-10], "-"), "-")
	if len(f) != 3 {
		return w, false
	}
	var n [3]int64
	for i, s := range f {
		if n[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return w, false
		}
	}
	return exclusion.Write{Token: n[0], Proc: int32(n[1]), G: int32(n[2]), Seq: seq}, true
}

// Collector gathers the history of the guarded nodes as a run goes: every
// Every it lists each node's children, records them (the name says the
// write; the sequence number, its place) and deletes them, so that a long
// run does not pile them up. Children are recorded once: a child listed
// again (its delete's outcome unknown) has a sequence number not above the
// highest recorded, and a new one has a higher one.
type Collector struct {
	conn   *zk.Conn
	guards []string
	every  time.Duration

	mu      sync.Mutex
	history []exclusion.Write
	high    []int64 // by path: highest sequence number recorded
	errs    int     // failed rounds (ZooKeeper unavailable: tried again)

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// Every is how often the Collector collects.
const Every = 500 * time.Millisecond

// StartCollector starts collecting the children of guards (the guarded
// nodes, indexed by lock path) on conn.
func StartCollector(conn *zk.Conn, guards []string) *Collector {
	return startCollector(conn, guards, Every)
}

func startCollector(conn *zk.Conn, guards []string, every time.Duration) *Collector {
	c := &Collector{conn: conn, guards: guards, every: every, high: make([]int64, len(guards)),
		stop: make(chan struct{}), done: make(chan struct{})}
	for i := range c.high {
		c.high[i] = -1
	}
	go c.loop()
	return c
}

func (c *Collector) loop() {
	defer close(c.done)
	t := time.NewTicker(c.every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.round()
		}
	}
}

// round collects every guarded node once; false if one could not be read.
func (c *Collector) round() bool {
	ok := true
	for p := range c.guards {
		if err := c.collect(p); err != nil {
			ok = false
			c.mu.Lock()
			c.errs++
			c.mu.Unlock()
		}
	}
	return ok
}

// collect records and deletes the children of guarded node p.
func (c *Collector) collect(p int) error {
	guard := c.guards[p]
	kids, _, err := c.conn.Children(guard)
	if err != nil {
		return err
	}
	var got []exclusion.Write
	var names []string
	for _, k := range kids {
		w, ok := parseChild(k)
		if !ok {
			continue
		}
		names = append(names, guard+"/"+k)
		if w.Seq > c.high[p] {
			w.Path = int32(p)
			got = append(got, w)
		}
	}
	slices.SortFunc(got, func(a, b exclusion.Write) int { return int(a.Seq - b.Seq) })
	c.mu.Lock()
	c.history = append(c.history, got...)
	if len(got) > 0 {
		c.high[p] = got[len(got)-1].Seq
	}
	c.mu.Unlock()
	return deleteAll(c.conn, names)
}

// deleteAll deletes nodes, in multis of up to 500, and one by one where a
// multi fails (one of them already gone: an earlier delete whose answer
// was lost).
func deleteAll(conn *zk.Conn, nodes []string) error {
	for len(nodes) > 0 {
		n := min(len(nodes), 500)
		ops := make([]any, n)
		for i, node := range nodes[:n] {
			ops[i] = &zk.DeleteRequest{Path: node, Version: -1}
		}
		if _, err := conn.Multi(ops...); err != nil {
			for _, node := range nodes[:n] {
				if err := conn.Delete(node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
					return err
				}
			}
		}
		nodes = nodes[n:]
	}
	return nil
}

// Finish stops the collector, collects what is left (the workers are gone)
// and returns the history: every write the servers applied, by path. It
// also checks the history against the guarded nodes: each write bumped its
// node's version, so the versions count the writes applied, and the last
// write's token is the node's data; a history that disagrees is an error
// (a write lost by the collector, or one applied without its child).
func (c *Collector) Finish() ([]exclusion.Write, error) {
	c.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for !c.round() {
		if time.Now().After(deadline) {
			return c.history, fmt.Errorf("guarded nodes: not readable within 30s after the run")
		}
		time.Sleep(200 * time.Millisecond)
	}
	count := make([]int, len(c.guards))
	last := make([]exclusion.Write, len(c.guards))
	for _, w := range c.history {
		count[w.Path]++
		if w.Seq >= last[w.Path].Seq {
			last[w.Path] = w
		}
	}
	var errs []error
	for p, guard := range c.guards {
		data, st, err := c.conn.Get(guard)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", guard, err))
			continue
		}
		if int(st.Version) != count[p] {
			errs = append(errs, fmt.Errorf("%s: version %d after the run, but %d writes collected", guard, st.Version, count[p]))
			continue
		}
		if count[p] > 0 {
			if want := fmt.Sprintf("%d %d %d", last[p].Token, last[p].Proc, last[p].G); string(data) != want {
				errs = append(errs, fmt.Errorf("%s: data %q after the run, but the last write collected is %q", guard, data, want))
			}
		}
	}
	return c.history, errors.Join(errs...)
}

// Stop stops collecting (Finish stops it too).
func (c *Collector) Stop() {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
}

// Errors is how many collection rounds failed so far (and were tried
// again at the next).
func (c *Collector) Errors() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errs
}

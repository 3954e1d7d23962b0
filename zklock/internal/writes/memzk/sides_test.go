package memzk_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/writes/memzk"
)

// client is one session's requests, as both sides take them: a real
// session (conn) and a session of the double (session).
type client interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateContainer(path string, data []byte, acl []zk.ACL) (string, error)
	Delete(path string, version int32) error
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error)
	Get(path string) ([]byte, *zk.Stat, error)
	Exists(path string) (bool, *zk.Stat, error)
	Children(path string) ([]string, *zk.Stat, error)
	Multi(ops ...any) ([]zk.MultiResponse, error)
}

type conn struct{ *zk.Conn }

func (c conn) CreateContainer(path string, data []byte, acl []zk.ACL) (string, error) {
	return c.Conn.CreateContainer(path, data, zk.FlagContainer, acl)
}

type session struct {
	*memzk.Tree
	sid int64
}

func (s session) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	return s.Tree.Create(s.sid, path, data, flags, acl)
}

func (s session) CreateContainer(path string, data []byte, acl []zk.ACL) (string, error) {
	return s.Tree.CreateContainer(s.sid, path, data, acl)
}

func (s session) Delete(path string, version int32) error {
	return s.Tree.Delete(s.sid, path, version)
}

func (s session) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	return s.Tree.Set(s.sid, path, data, version)
}

func (s session) Exists(path string) (bool, *zk.Stat, error) {
	ok, st := s.Tree.Exists(path)
	return ok, st, nil
}

func (s session) Multi(ops ...any) ([]zk.MultiResponse, error) { return s.Tree.Multi(s.sid, ops...) }

// run makes st's request on c and renders the answer.
func run(c client, v view, st step) string {
	if st.multi {
		reqs := make([]any, len(st.ops))
		for i, o := range st.ops {
			reqs[i] = o.request(v.root)
		}
		return v.multi(c.Multi(reqs...))
	}
	o := st.ops[0]
	p := v.root + o.path
	switch o.kind {
	case kCreate:
		return v.created(c.Create(p, o.data, o.flags, acls[o.acl]))
	case kContainer:
		return v.created(c.CreateContainer(p, o.data, acls[o.acl]))
	case kDelete:
		return errName(c.Delete(p, o.version))
	case kSet:
		s, err := c.Set(p, o.data, o.version)
		return errName(err) + " " + v.stat(s)
	case kSetACL:
		s, err := c.SetACL(p, acls[o.acl], o.version)
		return errName(err) + " " + v.stat(s)
	case kGet:
		return v.got(c.Get(p))
	case kExists:
		return v.exists(c.Exists(p))
	case kChildren:
		return v.children(c.Children(p))
	}
	panic(fmt.Sprintf("step %v: not a single request", st))
}

// exists renders Exists' answer; the double's Exists returns no error (a
// malformed path answers false and no Stat, as Conn.Exists does), so an
// error other than zk.ErrInvalidPath shows, and fails the comparison.
func (v view) exists(ok bool, s *zk.Stat, err error) string {
	out := fmt.Sprintf("%v %s", ok, v.stat(s))
	if err != nil && !errors.Is(err, zk.ErrInvalidPath) {
		out += " " + errName(err)
	}
	return out
}

// dump renders the tree under path as c sees it: every node's Stat, and
// its children unless its ACL hides them (their count still shows).
func dump(c client, v view, path string) string {
	var b strings.Builder
	var walk func(p string)
	walk = func(p string) {
		_, s, _ := c.Exists(p)
		kids, _, err := c.Children(p)
		fmt.Fprintf(&b, "%s %s %s\n", v.path(p), v.stat(s), errName(err))
		for _, k := range sorted(kids) {
			walk(p + "/" + k)
		}
	}
	walk(path)
	return b.String()
}

// pair is the real server and the double, given the same steps, each
// slot of sessions holding one session on each side.
type pair struct {
	t       testing.TB
	servers []string
	conns   [3]*zk.Conn
	gen     [3]int
	real    view
	dbl     view
	tree    *memzk.Tree
}

// newPair returns a pair whose real sessions, on servers, the test closes
// at its end; reset gives it a fresh root and double before each sequence.
func newPair(t testing.TB, servers []string) *pair {
	p := &pair{t: t, servers: servers, real: view{names: map[int64]string{}}, dbl: view{names: map[int64]string{}}}
	t.Cleanup(func() {
		for _, c := range p.conns {
			if c != nil {
				c.Close()
			}
		}
	})
	for slot := range p.conns {
		p.open(slot)
	}
	return p
}

// reset starts a sequence: a new root under base on the server (made by
// session A, with its ancestors), a new tree whose root is /t.
func (p *pair) reset(base string) {
	p.t.Helper()
	c := p.conns[0]
	for _, q := range ancestors(base) {
		if _, err := c.Create(q, nil, 0, acls[0]); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			p.t.Fatalf("create %s: %v", q, err)
		}
	}
	p.real.root = base
	p.tree = memzk.New()
	if _, err := p.tree.Create(1, "/t", nil, 0, acls[0]); err != nil {
		p.t.Fatal(err)
	}
	p.dbl.root = "/t"
}

func ancestors(path string) []string {
	var out []string
	for i := 1; i <= len(path); i++ {
		if i == len(path) || path[i] == '/' {
			out = append(out, path[:i])
		}
	}
	return out
}

func (p *pair) sid(slot int) int64 { return int64(slot+1)*1000 + int64(p.gen[slot]) }

func (p *pair) name(slot int) string { return fmt.Sprintf("%c%d", 'A'+slot, p.gen[slot]) }

// open gives slot a new real session, and names it on both sides.
func (p *pair) open(slot int) {
	p.t.Helper()
	c, events, err := zk.Connect(p.servers, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		p.t.Fatal(err)
	}
	p.conns[slot] = c
	timeout := time.After(20 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-timeout:
			p.t.Fatalf("session %s: no session after 20 s", p.name(slot))
		}
	}
	p.real.names[c.SessionID()] = p.name(slot)
	p.dbl.names[p.sid(slot)] = p.name(slot)
}

// do gives st to both sides and returns their answers.
func (p *pair) do(st step) (real, dbl string) {
	if !st.multi && st.ops[0].kind == kClose {
		p.conns[st.sess].Close()
		p.tree.CloseSession(p.sid(st.sess))
		p.gen[st.sess]++
		p.open(st.sess)
		return "closed", "closed"
	}
	real = run(conn{p.conns[st.sess]}, p.real, st)
	dbl = run(session{p.tree, p.sid(st.sess)}, p.dbl, st)
	return real, dbl
}

// dumps renders both trees under their roots.
func (p *pair) dumps() (real, dbl string) {
	return dump(conn{p.conns[0]}, p.real, p.real.root), dump(session{p.tree, p.sid(0)}, p.dbl, p.dbl.root)
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

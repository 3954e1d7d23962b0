package memzk_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
)

var (
	seqs  = flag.Int("memzk.seqs", 300, "random step sequences TestConformance gives ZooKeeper and the double")
	seed0 = flag.Uint64("memzk.seed", 0, "the first sequence's seed, the next ones follow (0: from the clock)")
	steps = flag.Int("memzk.steps", 30, "steps in each sequence")
)

// seqsSet says whether -memzk.seqs was given.
func seqsSet() bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "memzk.seqs" })
	return set
}

// TestConformance gives random sequences of steps to a real ZooKeeper and
// to the double and compares every answer, then the two trees. Each
// sequence comes from its seed alone (not from the answers), under a root
// of its own; a failure prints the seed, the command that replays it and
// the steps up to the one whose answers differ. Sequences run on a few
// workers side by side, each with sessions of its own: the server's
// writes wait for its disk, and it writes those of concurrent requests
// together. A run of 200 sequences or more must have seen each of the
// server's answers in outcomes, or the sequences no longer try them all.
func TestConformance(t *testing.T) {
	n := *seqs
	if testing.Short() && !seqsSet() {
		n = 60 // about 2 s, against 7 for 300; the answers seen are not judged under 200
	}
	base := *seed0
	if base == 0 {
		base = uint64(time.Now().UnixNano())
	}
	t.Logf("%d sequences of %d steps, seeds %d to %d", n, *steps, base, base+uint64(n)-1)
	var seen tally
	t.Run("workers", func(t *testing.T) {
		workers := min(n, 4)
		for w := range workers {
			t.Run(fmt.Sprint(w), func(t *testing.T) {
				t.Parallel()
				p := newPair(t, zktest.Servers(t))
				root := zktest.Path(t)
				for i := w; i < n; i += workers {
					conform(t, p, fmt.Sprintf("%s/%d", root, i), base+uint64(i), &seen)
				}
			})
		}
	})
	t.Logf("answers seen: %v", seen.counts)
	if n < 200 || t.Failed() {
		return
	}
	for _, o := range outcomes {
		if seen.counts[o] == 0 {
			t.Errorf("no answer %s in %d sequences", o, n)
		}
	}
}

// outcomes are the answers a normal run must see.
var outcomes = []string{
	"ok", "ok [", "NoNode", "NodeExists", "BadVersion", "NotEmpty", "NoChildrenForEphemerals", "NoAuth",
	"InvalidACL", "BadArguments", "APIError", "InvalidPath", "InvalidFlags",
	`"unknown error: -2"`, `"unknown error: -5"`, "closed",
}

// tally counts the outcomes in the server's answers.
type tally struct {
	mu     sync.Mutex
	counts map[string]int
}

func (y *tally) add(answer string) {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.counts == nil {
		y.counts = map[string]int{}
	}
	for _, o := range outcomes {
		y.counts[o] += strings.Count(answer, o)
	}
}

// conform gives the sequence of seed to both sides of p, under root.
func conform(t *testing.T, p *pair, root string, seed uint64, seen *tally) {
	t.Helper()
	p.reset(root)
	prog := generate(rand.New(rand.NewPCG(seed, 0)), *steps)
	var log []string
	for j, st := range prog {
		real, dbl := p.do(st)
		seen.add(real)
		log = append(log, fmt.Sprintf("%3d %v\n      %s", j, st, real))
		if real != dbl {
			t.Fatalf("%s\n    double %s", replay(seed, log), dbl)
		}
	}
	if real, dbl := p.dumps(); real != dbl {
		t.Fatalf("%s\nthe trees differ:\nserver:\n%s\ndouble:\n%s", replay(seed, log), real, dbl)
	}
}

func replay(seed uint64, log []string) string {
	return fmt.Sprintf("seed %d differs; replay: go test ./zklock/internal/writes/memzk/ -run 'TestConformance$' -args -memzk.seed=%d -memzk.seqs=1 -memzk.steps=%d\nsteps (and the server's answers):\n%s",
		seed, seed, *steps, strings.Join(log, "\n"))
}

// The paths steps draw from, a few so that many requests fail, each way.
// /k alone may be a container, and nothing is ever made below it: the
// server reaps containers that had a child on its own clock, which the
// sequences do not follow (TestContainersReaped does).
var (
	plainPaths = []string{"/a", "/b", "/a/x", "/a/y", "/b/x", "/a/x/z", "/e", "/e/x"}
	seqPrefix  = []string{"/a/s-", "/s-", "/b/", "/e/s-"}
	badPaths   = []string{"/a/", "/a/.", "/a//x", "/a/x/", "/a/\ue000", "/a/\U0001F600"}
)

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// weighted picks an index of weights, each as likely as its weight.
func weighted(r *rand.Rand, weights ...int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	n := r.IntN(total)
	for i, w := range weights {
		if n < w {
			return i
		}
		n -= w
	}
	return len(weights) - 1
}

// generate returns a sequence of n steps: multis of 1 to 6 ops, single
// writes and reads, now and then a session's end.
func generate(r *rand.Rand, n int) []step {
	prog := make([]step, n)
	for i := range prog {
		sess := r.IntN(3)
		switch weighted(r, 45, 40, 12, 3) {
		case 0:
			// Half the multis are likely to be applied, so that there
			// are many of each kind.
			gen := multiOp
			if r.IntN(2) == 0 {
				gen = likelyOp
			}
			ops := make([]op, 1+weighted(r, 30, 25, 20, 10, 8, 7))
			for j := range ops {
				ops[j] = gen(r)
			}
			prog[i] = multi(sess, ops...)
		case 1:
			prog[i] = one(sess, singleWrite(r))
		case 2:
			prog[i] = one(sess, op{kind: pick(r, []kind{kGet, kExists, kChildren}), path: path(r)})
		default:
			prog[i] = closes(sess)
		}
	}
	return prog
}

func multiOp(r *rand.Rand) op {
	switch weighted(r, 45, 15, 15, 24, 1) {
	case 0:
		flags := []int32{persistent, ephemeral, sequential, ephSeq, container, ttl, seqTTL, 7}[weighted(r, 30, 20, 15, 20, 4, 2, 2, 2)]
		return create(r, flags)
	case 1:
		return dl(path(r), version(r))
	case 2:
		return op{kind: kSet, path: path(r), data: data(r), version: version(r)}
	case 3:
		return ck(path(r), version(r))
	}
	return value(path(r))
}

// likelyOp is an op that a multi can usually apply: a sequential create
// under the root (which is always there) or under /a, a create of /a or
// /b, a set or a check of the root, a check of /a or /b, the delete of a
// sequential node.
func likelyOp(r *rand.Rand) op {
	switch weighted(r, 35, 15, 10, 10, 15, 15) {
	case 0:
		flags := []int32{sequential, ephSeq}[r.IntN(2)]
		return op{kind: kCreate, path: pick(r, []string{"/s-", "/a/s-"}), data: data(r), flags: flags}
	case 1:
		return op{kind: kCreate, path: pick(r, []string{"/a", "/b"}), flags: persistent, acl: acl(r)}
	case 2:
		return op{kind: kSet, data: data(r), version: -1}
	case 3:
		return ck("", pick(r, []int32{-1, -1, 0, 1}))
	case 4:
		return ck(pick(r, []string{"/a", "/b"}), pick(r, []int32{-1, -1, 0, 1}))
	}
	return dl(fmt.Sprintf("/s-%010d", r.IntN(6)), -1)
}

func singleWrite(r *rand.Rand) op {
	switch weighted(r, 45, 5, 30, 15, 5) {
	case 0:
		flags := []int32{persistent, ephemeral, sequential, ephSeq, container, ttl, 7}[weighted(r, 30, 20, 15, 20, 4, 2, 2)]
		return create(r, flags)
	case 1:
		return op{kind: kContainer, path: "/k", data: data(r), acl: acl(r)}
	case 2:
		return dl(path(r), version(r))
	case 3:
		return op{kind: kSet, path: path(r), data: data(r), version: version(r)}
	}
	return op{kind: kSetACL, path: path(r), acl: acl(r), version: version(r)}
}

// create is a create with flags, at a sequential prefix when they make a
// sequential node, at /k when a container.
func create(r *rand.Rand, flags int32) op {
	p := path(r)
	switch {
	case flags == container:
		p = "/k"
	case flags&sequential != 0 && r.IntN(5) > 0:
		p = pick(r, seqPrefix)
	}
	return op{kind: kCreate, path: p, data: data(r), flags: flags, acl: acl(r)}
}

// path is mostly a plain path, else a sequential node's name (which may
// exist), a prefix as a name, or a malformed path.
func path(r *rand.Rand) string {
	switch weighted(r, 70, 20, 5, 5) {
	case 0:
		return plainPaths[weighted(r, 25, 15, 15, 10, 10, 8, 10, 7)]
	case 1:
		return fmt.Sprintf("%s%010d", pick(r, seqPrefix), r.IntN(4))
	case 2:
		return pick(r, seqPrefix)
	}
	return pick(r, badPaths)
}

func version(r *rand.Rand) int32 { return []int32{-1, 0, 1, 2}[weighted(r, 60, 20, 12, 8)] }

func data(r *rand.Rand) []byte { return [][]byte{nil, {}, []byte("x"), []byte("hello")}[r.IntN(4)] }

func acl(r *rand.Rand) int {
	if r.IntN(5) > 0 {
		return aclAll
	}
	return 1 + r.IntN(len(acls)-1)
}

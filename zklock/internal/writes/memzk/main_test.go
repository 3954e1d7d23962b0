package memzk_test

import (
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
)

// The tests that compare the double with ZooKeeper share one real server
// (internal/zktest), started before them and stopped after.
func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// expect gives each step to both sides of p and checks that both answer
// what the server was seen to answer, want[i]; then that both trees read
// the same.
func expect(t *testing.T, p *pair, steps []step, want []string) {
	t.Helper()
	answers(t, p, steps, want)
	if real, dbl := p.dumps(); real != dbl {
		t.Errorf("the trees differ:\nserver:\n%s\ndouble:\n%s", real, dbl)
	}
}

// answers gives each step to both sides of p and checks that both answer
// want[i].
func answers(t *testing.T, p *pair, steps []step, want []string) {
	t.Helper()
	if len(steps) != len(want) {
		t.Fatalf("%d steps, %d answers written down", len(steps), len(want))
	}
	for i, st := range steps {
		real, dbl := p.do(st)
		if real != want[i] || dbl != want[i] {
			t.Errorf("step %d %v:\n  written down %s\n  server       %s\n  double       %s", i, st, want[i], real, dbl)
		}
	}
}

// Constructors of steps, for the written-down cases: multi and one of the
// sessions A, B, C; the ops with all permissions and no data unless said.
const (
	A = iota
	B
	C
)

func multi(sess int, ops ...op) step { return step{sess: sess, multi: true, ops: ops} }
func one(sess int, o op) step        { return step{sess: sess, ops: []op{o}} }

func cr(path string, flags int32) op { return op{kind: kCreate, path: path, flags: flags} }
func crACL(path string, flags int32, acl int) op {
	return op{kind: kCreate, path: path, flags: flags, acl: acl}
}
func crData(path string, data []byte) op { return op{kind: kCreate, path: path, data: data} }
func ct(path string) op                  { return op{kind: kContainer, path: path} }
func dl(path string, v int32) op         { return op{kind: kDelete, path: path, version: v} }
func set(path, data string, v int32) op {
	return op{kind: kSet, path: path, data: []byte(data), version: v}
}
func ck(path string, v int32) op          { return op{kind: kCheck, path: path, version: v} }
func sa(path string, acl int, v int32) op { return op{kind: kSetACL, path: path, acl: acl, version: v} }
func get(path string) op                  { return op{kind: kGet, path: path} }
func ex(path string) op                   { return op{kind: kExists, path: path} }
func ls(path string) op                   { return op{kind: kChildren, path: path} }
func value(path string) op                { return op{kind: kValue, path: path} }
func closes(sess int) step                { return step{sess: sess, ops: []op{{kind: kClose}}} }

package memzk_test

import (
	"testing"

	"github.com/tierlock/tierlock/internal/zktest"
)

// Each rule of the double, as the server was seen to answer it: each case
// gives its steps to a real ZooKeeper 3.8 and to the double (fresh
// sessions A0, B0, C0 and a fresh root, "" in the answers) and both must
// answer what is written down. An answer reads: the error (ok, a
// sentinel's name, or the message of an error go-zookeeper makes up), then
// what the call returns besides: a multi's results ([created path, Stat of
// a set, ok, or the op's error]), a created path, a Stat as {version
// cversion aversion numChildren dataLength ephemeralOwner}.

type rule struct {
	steps []step
	want  []string
}

func runRules(t *testing.T, rules map[string]rule) {
	for name, r := range rules {
		t.Run(name, func(t *testing.T) {
			p := newPair(t, zktest.Servers(t))
			p.reset(zktest.Path(t))
			expect(t, p, r.steps, r.want)
		})
	}
}

const (
	persistent = 0
	ephemeral  = 1
	sequential = 2
	ephSeq     = 3
	container  = 4
	ttl        = 5
	seqTTL     = 6
)

// TestSequenceAndCversion: a sequential suffix is the count of children
// ever created; the Stat's Cversion counts creates and deletes (ZooKeeper
// stores the creates, and reports 2*creates - numChildren).
func TestSequenceAndCversion(t *testing.T) {
	runRules(t, map[string]rule{
		"suffix counts creates, cversion creates and deletes": {
			steps: []step{
				one(A, cr("/a", persistent)),
				one(A, cr("/a/s-", sequential)),
				one(A, cr("/a/s-", sequential)),
				one(A, dl("/a/s-0000000000", -1)),
				one(A, ex("/a")),
				one(A, cr("/a/s-", sequential)),
				one(A, cr("/a/p", persistent)),
				one(A, dl("/a/p", -1)),
				one(A, cr("/a/s-", ephSeq)),
				one(A, ex("/a")),
			},
			want: []string{
				"ok /a",
				"ok /a/s-0000000000",
				"ok /a/s-0000000001",
				"ok",
				"true {v0 cv3 av0 n1 len0 eo-}",
				"ok /a/s-0000000002",
				"ok /a/p",
				"ok",
				"ok /a/s-0000000004",
				"true {v0 cv7 av0 n3 len0 eo-}",
			},
		},
		"a session's end moves cversion, not the suffix": {
			steps: []step{
				one(A, cr("/a", persistent)),
				one(B, cr("/a/e", ephemeral)),
				one(B, cr("/a/s-", ephSeq)),
				one(C, cr("/a/c", ephemeral)),
				one(A, ex("/a/e")),
				one(A, ex("/a")),
				closes(B),
				one(A, ex("/a")),
				one(A, ls("/a")),
				one(B, cr("/a/s-", ephSeq)),
				one(A, ex("/a/s-0000000003")),
			},
			want: []string{
				"ok /a",
				"ok /a/e",
				"ok /a/s-0000000001",
				"ok /a/c",
				"true {v0 cv0 av0 n0 len0 eoB0}",
				"true {v0 cv3 av0 n3 len0 eo-}",
				"closed",
				"true {v0 cv5 av0 n1 len0 eo-}",
				"ok [c] {v0 cv5 av0 n1 len0 eo-}",
				"ok /a/s-0000000003",
				"true {v0 cv0 av0 n0 len0 eoB1}",
			},
		},
	})
}

// TestMultiAllOrNothing: a multi's results when it is applied, and when
// one op fails it: the ops before report no error, the failing op its
// own, the ops after the server's RUNTIMEINCONSISTENCY (no sentinel in
// go-zookeeper); nothing stays, not even a sequence number.
func TestMultiAllOrNothing(t *testing.T) {
	runRules(t, map[string]rule{
		"applied": {
			steps: []step{
				multi(A, cr("/a", persistent), cr("/a/s-", sequential), set("/a", "x", -1), ck("/a", 1), dl("/a/s-0000000000", -1)),
				one(A, ex("/a")),
				multi(A),
			},
			want: []string{
				"ok [/a /a/s-0000000000 {v1 cv1 av0 n1 len1 eo-} ok ok]",
				"true {v1 cv2 av0 n0 len1 eo-}",
				"ok []",
			},
		},
		"refused and taken back": {
			steps: []step{
				one(A, cr("/a", persistent)),
				multi(A, cr("/a/s-", sequential), cr("/a/b", persistent), set("/a", "x", -1), cr("/nope/x", persistent), cr("/a/c", persistent)),
				one(A, ex("/a")),
				one(A, cr("/a/s-", sequential)),
				one(A, ex("/a/b")),
				multi(A, dl("/a/s-0000000000", -1), cr("/a", persistent), cr("/a/d", persistent)),
				one(A, ex("/a/s-0000000000")),
			},
			want: []string{
				"ok /a",
				`NoNode [ok ok ok NoNode "unknown error: -2"]`,
				"true {v0 cv0 av0 n0 len0 eo-}",
				"ok /a/s-0000000000",
				"false {v0 cv0 av0 n0 len0 eo-}",
				`NodeExists [ok NodeExists "unknown error: -2"]`,
				"true {v0 cv0 av0 n0 len0 eo-}",
			},
		},
		"ops see the ops before them": {
			steps: []step{
				one(A, cr("/d", persistent)),
				multi(A, set("/d", "yy", 0), ck("/d", 1)),
				multi(A, ck("/d", 1), set("/d", "z", 1), ck("/d", 1)),
				multi(A, dl("/d", -1), cr("/d", persistent)),
				multi(A, cr("/e", persistent), dl("/e", -1)),
				one(A, ex("")),
				one(A, ex("/d")),
			},
			want: []string{
				"ok /d",
				"ok [{v1 cv0 av0 n0 len2 eo-} ok]",
				"BadVersion [ok ok BadVersion]",
				"ok [ok /d]",
				"ok [/e ok]",
				"true {v0 cv5 av0 n1 len0 eo-}",
				"true {v0 cv0 av0 n0 len0 eo-}",
			},
		},
		"an op that is not a pointer, a nil pointer": {
			steps: []step{
				multi(A, cr("/a", persistent), value("/a")),
				multi(A, cr("/a", persistent), op{kind: kNil}),
				multi(A, op{kind: kNil}, value("/a")),
				one(A, ex("/a")),
			},
			want: []string{
				`"unknown operation type zk.CheckVersionRequest" nil`,
				"UnhandledFieldType []",
				`"unknown operation type zk.CheckVersionRequest" nil`,
				"false {v0 cv0 av0 n0 len0 eo-}",
			},
		},
	})
}

// TestMultiFlags: what the server does with each create flag in a multi.
// A container is created, but its result cannot be decoded by
// go-zookeeper (zk.ErrAPIError, the results before it); a TTL flag fails
// the whole request (MARSHALLINGERROR, no result, nothing applied) once
// the ops before it passed; an unknown flag fails its op.
func TestMultiFlags(t *testing.T) {
	runRules(t, map[string]rule{
		"container": {
			steps: []step{
				multi(A, cr("/a", persistent), cr("/k", container), cr("/b", persistent)),
				one(A, ex("/k")),
				one(A, ex("/b")),
				multi(A, cr("/k2", container), cr("/a", persistent)),
				one(A, ex("/k2")),
			},
			want: []string{
				"APIError [/a]",
				"true {v0 cv0 av0 n0 len0 eo-}",
				"true {v0 cv0 av0 n0 len0 eo-}",
				`NodeExists [ok NodeExists]`,
				"false {v0 cv0 av0 n0 len0 eo-}",
			},
		},
		"ttl": {
			steps: []step{
				one(A, cr("/a", persistent)),
				multi(A, cr("/c", persistent), cr("/t", ttl)),
				one(A, ex("/c")),
				multi(A, cr("/a", persistent), cr("/t", ttl)),
				multi(A, cr("/t", seqTTL)),
			},
			want: []string{
				"ok /a",
				`"unknown error: -5" []`,
				"false {v0 cv0 av0 n0 len0 eo-}",
				`NodeExists [NodeExists "unknown error: -2"]`,
				`"unknown error: -5" []`,
			},
		},
		"unknown flags": {
			steps: []step{
				multi(A, cr("/f", 7)),
				multi(A, cr("/g", persistent), cr("/f", -1)),
				one(A, cr("/f", 7)),
				one(A, cr("/f", ttl)),
				one(A, cr("/f", seqTTL)),
			},
			want: []string{
				"BadArguments [BadArguments]",
				`BadArguments [ok BadArguments]`,
				`"invalid flag value: [7]"`,
				"InvalidFlags",
				"InvalidFlags",
			},
		},
	})
}

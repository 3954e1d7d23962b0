package session

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// Issue 49, item 5: zk.ErrClosing is go-zookeeper's own close, not the
// server's refusal. Its Close fails with it every request it wrote whose
// answer had not come (conn.go: flushRequests(ErrClosing) once its loop
// ends), which the server may have applied. It was counted as a refusal,
// so a lone create or delete answered so was settled "refused at its own
// op", not applied, whatever the server did. It leaves the outcome
// unknown: the answer carries no result per op, and the write path
// settles the write Unknown. (A request never written is failed with
// zk.ErrConnectionClosed or zk.ErrNoServer, which were never refusals.)
func TestClosingLeavesTheOutcomeUnknown(t *testing.T) {
	if Refusal(zk.ErrClosing) {
		t.Error("zk.ErrClosing counted as the server's refusal")
	}
	q := writes.New(writes.Conn{
		Connected: func() bool { return true },
		SessionID: func() int64 { return 1 },
		Send: func(reqs []*writes.Request) []writes.Answer {
			// A lone create, as sendWrites answers it.
			return []writes.Answer{answerOf(zk.ErrClosing, zk.MultiResponse{Error: zk.ErrClosing})}
		},
		Ended:           func(bool, time.Duration) {},
		DeleteApart:     func(string, int64) {},
		Queued:          func(string, string, int64) {},
		Go:              func(fn func()) { go fn() },
		Now:             time.Now,
		AfterFunc:       func(d time.Duration, f func()) writes.Timer { return time.AfterFunc(d, f) },
		Closed:          func() error { return ErrClosed },
		GoneWithSession: ErrGoneWithSession,
	}, writes.Config{MaxOps: 16, MaxBytes: 1 << 20, MaxApart: 4, FoldWait: time.Millisecond})
	defer q.Stop()
	w := q.Create("/l", "/l/_c_x-lock-", nil, zk.WorldACL(zk.PermAll))
	<-w.Done
	if r := w.Result(); r.Verdict != writes.Unknown {
		t.Errorf("a lone create answered zk.ErrClosing: verdict %d (%v); want Unknown (%d)", r.Verdict, r.Err, writes.Unknown)
	}
}

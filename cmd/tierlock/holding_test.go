package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The holder's time and token are exact only when the queue has not
// changed since it queued; a lower bound when the last change was the
// last node's create; unknown after a delete (the hand-off, perhaps).
func TestHoldingBounds(t *testing.T) {
	now := time.Now()
	ps := []zklock.Participant{
		{Node: "_c_a-lock-0000000003", Holder: true, Created: now.Add(-10 * time.Second)},
		{Node: "_c_b-lock-0000000004", Created: now.Add(-4 * time.Second)},
	}
	cases := []struct {
		name        string
		st          queueStat
		held, token string
	}{
		{"not read", queueStat{}, "?", "?"},
		{"unchanged since it queued", queueStat{pzxid: 7, first: 7, last: 7}, "10s", "7"},
		{"the last change was the last node's create", queueStat{pzxid: 9, first: 7, last: 9}, "≥4s", "≥7"},
		{"the last change was a delete", queueStat{pzxid: 11, first: 7, last: 9}, "?", "≥7"},
	}
	for _, c := range cases {
		v := viewOf("/l", ps, c.st, now).Nodes[0]
		if v.heldText() != c.held || v.tokenText() != c.token {
			t.Errorf("%s: HELD %s TOKEN %s, want %s %s", c.name, v.heldText(), v.tokenText(), c.held, c.token)
		}
	}
	if v := viewOf("/l", ps, queueStat{pzxid: 9, first: 7, last: 9}, now).Nodes[1]; v.HeldSec != nil || v.Token != 0 {
		t.Errorf("a waiter has a held time or token: %+v", v)
	}
	var nobody *nodeView
	if nobody.heldText() != "-" || nobody.tokenText() != "-" {
		t.Error("no holder: want -")
	}
}

// A table with a maximum cuts its last cell short, and no shorter than
// minLast.
func TestTableCut(t *testing.T) {
	long := strings.Repeat("x", 40)
	for _, c := range []struct {
		first string
		width int // of the line with the long cell
	}{{"a", 30}, {strings.Repeat("a", 25), 27 + minLast}} {
		var b bytes.Buffer
		if err := (&table{w: &b, max: 30}).rows([]string{"A", "B"}, []string{c.first, long}); err != nil {
			t.Fatal(err)
		}
		line := strings.Split(b.String(), "\n")[1]
		if n := utf8.RuneCountInString(line); n != c.width || !strings.HasSuffix(line, "x…") {
			t.Errorf("%d columns, want %d, cut with an ellipsis: %q", n, c.width, line)
		}
	}
}

// An empty listing reads nothing and bounds nothing, among others or
// alone.
func TestReadQueueStatsEmpty(t *testing.T) {
	p := zktest.Path(t)
	s := connect(t)
	acquire(t, zktest.Context(t, 10*time.Second), newLock(t, s, p))
	ps, err := zklock.ListParticipants(context.Background(), s, p)
	if err != nil {
		t.Fatal(err)
	}
	c := &cli{s: s}
	sts := c.readQueueStats(context.Background(), []string{p + "-none", p, p + "-none"}, [][]zklock.Participant{nil, ps, nil})
	if sts[0] != (queueStat{}) || sts[2] != (queueStat{}) || sts[1].first == 0 || sts[1].pzxid != sts[1].first || sts[1].last != sts[1].first {
		t.Errorf("stats %+v", sts)
	}
	if st := c.readQueueStat(context.Background(), p+"-none", nil); st != (queueStat{}) {
		t.Errorf("empty listing: %+v", st)
	}
}

package tier_test

import (
	"bytes"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// reportStuck logs what a scene needs to say why its waiters on paths did
// not return: each path's queue as the server has it (obs), the lines of
// the waiters' session log (its debug log, log) that name the path, and
// the stacks of the goroutines still inside an acquisition. A scene calls
// it when a bound on its waiters ran out, before it fails.
func reportStuck(t *testing.T, paths []string, obs *zklock.Session, log *zktest.SyncBuffer) {
	t.Helper()
	for _, p := range paths {
		t.Logf("still waiting on %s: the server's queue %v", p, children(t, obs.Conn(), p))
		var named []string
		for _, line := range strings.Split(log.String(), "\n") {
			if strings.Contains(line, p+"/") || strings.HasSuffix(line, p) || strings.Contains(line, p+" ") {
				named = append(named, line)
			}
		}
		t.Logf("the waiters' session log on %s (its last %d lines):\n%s", p, lastLines, tail(strings.Join(named, "\n"), lastLines))
	}
	var stacks bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&stacks, 2)
	for _, g := range strings.Split(stacks.String(), "\n\n") {
		if strings.Contains(g, "zklock.(*Lock).acquire") || strings.Contains(g, "tier.(*Lock).Acquire") {
			t.Logf("a goroutine still acquiring:\n%s", g)
		}
	}
}

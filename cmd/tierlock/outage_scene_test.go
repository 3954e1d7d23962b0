package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// watch says when it loses ZooKeeper and when it is back, for a lock path
// and for a root, in text and in JSON: a table that stops changing is not
// read as idle locks. On e876833 it printed nothing through the outage,
// on stdout or stderr.
func TestWatchSaysWhenZooKeeperIsLostAndBack(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an outage through a proxy, about 3 s")
	}
	root := zktest.Path(t)
	ctx := zktest.Context(t, time.Minute)
	s := connect(t)
	acquire(t, ctx, newLock(t, s, root+"/job", zklock.WithLabel("holder")))
	for _, c := range []struct {
		name string
		args []string
		lost string
		back string
	}{
		{"path", []string{root + "/job"}, "lost the connection to ZooKeeper", "connected to ZooKeeper again after"},
		{"root", []string{root}, "lost the connection to ZooKeeper", "connected to ZooKeeper again after"},
		{"json", []string{"-json", root}, `"event":"disconnected"`, `"event":"reconnected"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			px, err := faultproxy.New(zktest.Servers(t)[0], faultproxy.WithLogger(zktest.QuietLog))
			if err != nil {
				t.Fatal(err)
			}
			defer px.Close()
			var out, errOut zktest.SyncBuffer
			wctx, interrupt := context.WithCancel(ctx)
			defer interrupt()
			exited := make(chan int, 1)
			go func() {
				exited <- runContext(wctx, append([]string{"watch", "-zk", px.Addr()}, c.args...), &out, &errOut)
			}()
			zktest.Eventually(t, 10*time.Second, "the first listing", func() bool { return strings.Contains(out.String(), "holder") })
			px.Partition(0)
			zktest.Eventually(t, 10*time.Second, "the line of the lost connection", func() bool { return strings.Contains(out.String(), c.lost) })
			time.Sleep(300 * time.Millisecond)
			px.Heal()
			zktest.Eventually(t, 20*time.Second, "the line of its return", func() bool { return strings.Contains(out.String(), c.back) })
			interrupt()
			if code := <-exited; code != exitOK {
				t.Fatalf("watch exited %d: %s", code, errOut.String())
			}
			t.Logf("%s", out.String())
		})
	}
}

// ls marks a holder whose session no server lists among its connections
// (a process gone, whose nodes stay until its session expires), and only
// that one: in the table of a root, in a lock path's nodes, in -json. On
// e876833 such holders showed as any other.
func TestLsMarksAHolderWithoutAConnection(t *testing.T) {
	root := zktest.Path(t)
	ctx := zktest.Context(t, time.Minute)
	px, err := faultproxy.New(zktest.Servers(t)[0], faultproxy.WithLogger(zktest.QuietLog))
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	gone := zktest.Connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(20*time.Second), zklock.WithLossOnExpiryOnly())
	acquire(t, ctx, newLock(t, gone, root+"/gone", zklock.WithLabel("gone")))
	acquire(t, ctx, newLock(t, connect(t), root+"/live", zklock.WithLabel("live")))
	px.Partition(0) // its connection closed: the server keeps the session until it expires

	zktest.Eventually(t, 10*time.Second, "the mark", func() bool {
		return strings.Contains(tierlock(t, "ls", root).stdout, "[no connection] "+strconv.Itoa(os.Getpid())+`@`)
	})
	r := tierlock(t, "ls", root)
	r.want(t, exitOK, "[no connection] its session is connected to no server")
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, `"live"`) && strings.Contains(line, "no connection") {
			t.Errorf("the live holder is marked: %q", line)
		}
	}
	tierlock(t, "ls", root+"/gone").want(t, exitOK, "(no connection)", `label="gone"`)
	tierlock(t, "ls", "-json", root).want(t, exitOK, `"session_connected":false`, `"session_connected":true`)
	t.Log(r.stdout)
}

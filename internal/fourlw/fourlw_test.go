package fourlw

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeServer answers each four-letter word with answers[word] and closes,
// as ZooKeeper does; it returns its address.
func fakeServer(t *testing.T, answers map[string]string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4)
			_ = c.SetDeadline(time.Now().Add(time.Second))
			if _, err := io.ReadFull(c, buf); err == nil {
				_, _ = io.WriteString(c, answers[string(buf)])
			}
			c.Close()
		}
	})
	return ln.Addr().String()
}

const conf = "clientPort=2181\ndataDir=/tmp/zk\ntickTime=200\nmaxSessionTimeout=4000\n"

func TestListReadsSessionsAndTheLongestTimeout(t *testing.T) {
	cons := " /127.0.0.1:1(port=1,sid=0x1000a,queued=0)\n /127.0.0.1:2(port=2,sid=0xff,queued=0)\n /127.0.0.1:3[0](queued=0)\n"
	c, err := AskConnections(context.Background(), []string{fakeServer(t, map[string]string{"conf": conf, "cons": cons})}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Sessions) != 2 || !c.Sessions[0x1000a] || !c.Sessions[0xff] || c.MaxSessionTimeout != 4*time.Second {
		t.Fatalf("got %+v", c)
	}
}

func TestListRefused(t *testing.T) {
	refused := map[string]string{"conf": conf, "cons": "cons is not executed because it is not in the whitelist.\n"}
	_, err := AskConnections(context.Background(), []string{fakeServer(t, refused)}, Options{})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "cons") {
		t.Fatalf("got %v, want ErrRefused for cons", err)
	}
}

func TestListUnlistedMembers(t *testing.T) {
	ensemble := conf + "server.1=a:2888:3888:participant\nserver.2=b:2888:3888:participant\nserver.3=c:2888:3888:participant\n"
	_, err := AskConnections(context.Background(), []string{fakeServer(t, map[string]string{"conf": ensemble})}, Options{})
	if !errors.Is(err, ErrUnlisted) {
		t.Fatalf("got %v, want ErrUnlisted", err)
	}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
)

// freePorts finds a port p such that p and p+1 are free on 127.0.0.1.
func freePorts(t *testing.T) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		next, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1))
		ln.Close()
		if err == nil {
			next.Close()
			return p
		}
	}
	t.Fatal("no two consecutive free ports")
	return 0
}

// With -metrics each tier worker serves its locks' metrics while it runs,
// slot i on port+i: the test scrapes both workers over HTTP until each has
// counted acquisitions, and the run still passes.
func TestMetricsFlag(t *testing.T) {
	port := freePorts(t)
	var stdout, stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(context.Background(), []string{"-zk", strings.Join(zktest.Servers(t), ","), "-quiet",
			"-impl", "tier", "-procs", "2", "-goroutines", "4", "-duration", "4s", "-warmup", "500ms", "-probe", "0",
			"-metrics", fmt.Sprintf("127.0.0.1:%d", port)}, &stdout, &stderr)
	}()
	var wg sync.WaitGroup
	for slot := range 2 {
		url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port+slot)
		wg.Go(func() {
			deadline := time.Now().Add(30 * time.Second)
			for {
				body := get(url)
				if strings.Contains(body, `tierlock_acquisitions_total{lock="`) &&
					!strings.Contains(body, `tier="zookeeper"} 0`+"\n") &&
					strings.Contains(body, `tierlock_session_state{state="connected"} 1`) {
					return
				}
				if time.Now().After(deadline) {
					t.Errorf("worker %d: no acquisitions counted:\n%s", slot, body)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if c := <-code; c != exitOK {
		t.Fatalf("exit %d\n%s%s", c, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), fmt.Sprintf("http://127.0.0.1:%d/metrics", port+1)) {
		t.Errorf("the workers' addresses are not announced:\n%s", stderr.String())
	}
}

// get returns the body at url, or "" while nobody serves it.
func get(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestMetricsUsageErrors(t *testing.T) {
	for _, v := range []string{"9100", "127.0.0.1:0", "127.0.0.1:x", ":9100", "127.0.0.1:65535"} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"-metrics", v, "-procs", "2"}, &stdout, &stderr); code != exitUsage {
			t.Errorf("-metrics %q: exit %d, want %d", v, code, exitUsage)
		}
		if !strings.Contains(stderr.String(), "-metrics") {
			t.Errorf("-metrics %q: unclear error %q", v, stderr.String())
		}
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/stress/internal/proto"
)

func TestIdleFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		idle bool
	}{
		{[]string{"-idle-cost"}, true},
		{[]string{"-zk", "h:1", "--idle-cost=true"}, true},
		{[]string{"-idle-cost=false"}, false},
		{[]string{"-idle-sessions", "5"}, false},
		{[]string{"--", "-idle-cost"}, false},
	} {
		if got := isIdleCost(c.args); got != c.idle {
			t.Errorf("isIdleCost(%q) = %v, want %v", c.args, got, c.idle)
		}
	}
	all := []proto.Impl{proto.Gozk, proto.Zkcompat, proto.Tier}
	for _, c := range []struct {
		args []string
		want idleConfig
	}{
		{[]string{"-idle-cost"}, idleConfig{Impls: all, Sessions: 1000, For: time.Minute, Settle: 10 * time.Second,
			Stagger: 5 * time.Millisecond, Baseline: true, SessionTimeout: 10 * time.Second, ConnectTimeout: 10 * time.Second,
			Tick: 200 * time.Millisecond}},
		{[]string{"-idle-cost", "-impl", "tier", "-idle-sessions", "50", "-idle-for", "10s", "-session-timeout", "30s",
			"-zk", "h:1", "-idle-baseline=false"},
			idleConfig{Impls: []proto.Impl{proto.Gozk, proto.Tier}, Sessions: 50, For: 10 * time.Second, Settle: 30 * time.Second,
				Stagger: 5 * time.Millisecond, SessionTimeout: 30 * time.Second, ConnectTimeout: 10 * time.Second,
				ZK: []string{"h:1"}, Tick: 200 * time.Millisecond}},
	} {
		cfg, err := parseIdleFlags(c.args, io.Discard)
		if err != nil || !reflect.DeepEqual(cfg, c.want) {
			t.Errorf("stress %q:\n got %+v, %v\nwant %+v", c.args, cfg, err, c.want)
		}
	}
}

func TestIdleFlagsRefused(t *testing.T) {
	for _, bad := range [][]string{
		{"-idle-cost", "-impl", "zklock"},
		{"-idle-cost", "-idle-sessions", "0"},
		{"-idle-cost", "-idle-for", "500ms"},
		{"-idle-cost", "-zk", "a:1,b:2"},
		{"-idle-cost", "-cold-n", "3"}, // not a flag of -idle-cost
		{"-idle-cost", "extra"},
	} {
		if code := runIdleCost(context.Background(), bad, io.Discard, io.Discard); code != exitUsage {
			t.Errorf("stress %q: exit %d, want %d", bad, code, exitUsage)
		}
	}
}

// TestIdleHelp checks that stress -h names the mode and that stress
// -idle-cost -h explains it.
func TestIdleHelp(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"-idle-cost", "-h"}, io.Discard, &out); code != exitOK {
		t.Fatalf("stress -idle-cost -h: exit %d", code)
	}
	for _, want := range []string{"Usage: stress -idle-cost", "zk_packets_received", "/proc/<pid>/stat", "-idle-sessions 1000", "-idle-for", "maxClientCnxns"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stress -idle-cost -h lacks %q", want)
		}
	}
	out.Reset()
	if code := run(context.Background(), []string{"-h"}, io.Discard, &out); code != exitOK {
		t.Fatalf("stress -h: exit %d", code)
	}
	for _, want := range []string{"-idle-cost", "stress -idle-cost -h", "stress -cold -h"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stress -h lacks %q", want)
		}
	}
}

// frame is a request as go-zookeeper writes it: length, xid, opcode, body.
func frame(op int32, body int) []byte {
	b := make([]byte, 12+body)
	binary.BigEndian.PutUint32(b, uint32(8+body))
	binary.BigEndian.PutUint32(b[4:], 7)
	binary.BigEndian.PutUint32(b[8:], uint32(op))
	return b
}

func TestFrameCounter(t *testing.T) {
	connect := make([]byte, 4+44)
	binary.BigEndian.PutUint32(connect, 44)
	binary.BigEndian.PutUint32(connect[4+8:], opPing) // a connect request's bytes that look like a ping: not counted
	var stream []byte
	stream = append(stream, connect...)
	stream = append(stream, frame(opPing, 0)...)
	stream = append(stream, frame(opSync, 9)...)
	stream = append(stream, frame(1, 40)...) // create
	stream = append(stream, frame(opPing, 0)...)
	for _, size := range []int{1, 3, 5, 12, 13, len(stream)} {
		w := &wireCount{}
		f := frameCounter{count: w.count}
		for p := stream; len(p) > 0; p = p[min(size, len(p)):] {
			f.feed(p[:min(size, len(p))])
		}
		if got := w.read(); got != (wireCounts{pings: 2, syncs: 1, other: 1}) {
			t.Errorf("writes of %d bytes: %+v", size, got)
		}
	}
}

// TestIdleTable prints a made-up run: the empty server subtracted, the
// ratios to gozk's, the periods, the failures, no line over 120 columns.
func TestIdleTable(t *testing.T) {
	cfg := idleConfig{Impls: []proto.Impl{proto.Gozk, proto.Zkcompat, proto.Tier}, Sessions: 1000, For: time.Minute,
		Settle: 10 * time.Second, Stagger: 5 * time.Millisecond, SessionTimeout: 10 * time.Second}
	phases := []idlePhase{
		{window: time.Minute, serverCPU: 600 * time.Millisecond, clientCPU: 60 * time.Millisecond, packets: 0},
		{impl: proto.Gozk, opened: 1000, alive: 1000, window: time.Minute, serverCPU: 1100 * time.Millisecond,
			clientCPU: 560 * time.Millisecond, packets: 18000, wire: wireCounts{pings: 18000}},
		{impl: proto.Zkcompat, opened: 999, alive: 998, failed: 1, errs: []string{"connect: context deadline exceeded"},
			window: time.Minute, serverCPU: -1, clientCPU: 3060 * time.Millisecond, packets: -1, wire: wireCounts{pings: 17982, syncs: 23976}},
		{impl: proto.Tier, opened: 1000, alive: 1000, window: time.Minute, serverCPU: 1600 * time.Millisecond,
			clientCPU: 1560 * time.Millisecond, packets: 42000, wire: wireCounts{pings: 18000, syncs: 24000}},
	}
	var b bytes.Buffer
	printIdle(&b, cfg, coldInfo{servers: []string{"127.0.0.1:2181"}, source: "started here", load0: "1 2 3", load1: "1 2 3"}, phases)
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"empty server", "zk.Lock", "zkcompat", "tier", "1000/1000", "998/1000", "less the empty server's",
		"n/a", "pinged every 3.33s, synced never", "synced every 2.50s", "requests written 42000, received by the server 42000", "lost: zkcompat: 1 of 999", "failed: zkcompat",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if len([]rune(line)) > 120 {
			t.Errorf("line of %d columns: %q", len([]rune(line)), line)
		}
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == "empty" && (f[2] != "0" || f[len(f)-2] != "1.0%" || f[len(f)-1] != "0.1%") {
			t.Errorf("empty server's row: %q", line)
		}
		if len(f) > 2 && strings.Contains(f[1], "/") {
			rows[f[0]] = f
		}
	}
	// name sessions pings syncs other received x server-ms x %core client-ms x %core
	want := map[string][]string{
		"zk.Lock":  {"zk.Lock", "1000/1000", "18.0", "0", "0", "18.0", "1.00", "0.500", "1.00", "1.8%", "0.500", "1.00", "0.9%"},
		"tier":     {"tier", "1000/1000", "18.0", "24.0", "0", "42.0", "2.33", "1.00", "2.00", "2.7%", "1.50", "3.00", "2.6%"},
		"zkcompat": {"zkcompat", "998/1000", "18.0", "24.0", "0", "n/a", "-", "n/a", "-", "n/a", "3.00", "6.01", "5.1%"},
	}
	for name, w := range want {
		if !slices.Equal(rows[name], w) {
			t.Errorf("row %s:\n got %q\nwant %q", name, rows[name], w)
		}
	}
}

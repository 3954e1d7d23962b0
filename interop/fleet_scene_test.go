package interop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/peers"
	"github.com/tierlock/tierlock/internal/zktest"
)

// The families of lock clients a fleet is made of. Each member of a fleet
// is one process.
const (
	famTier         = "tier"          // tier.Lock, strict release order
	famTierHandoff  = "tier-handoff"  // tier.Lock with tier.WithHandoff
	famGozk         = "gozk"          // go-zookeeper's zk.Lock, one per goroutine
	famZkcompat     = "zkcompat"      // the drop-in, one handle per goroutine
	famCurator      = "curator"       // Curator's InterProcessMutex, one per thread
	famKazoo        = "kazoo"         // kazoo's Lock with extra_lock_patterns=("-lock-",)
	famKazooNoExtra = "kazoo-noextra" // kazoo's Lock as it comes: only its own nodes count
	famKazooRead    = "kazoo-read"    // kazoo's ReadLock (with the extra pattern)
)

// childEnv carries a childSpec to a Go member: the test binary re-executed.
const childEnv = "TIERLOCK_INTEROP_CHILD"

// holdMicros is the critical section of every member: the holder sleeps
// this long between its enter and exit records.
const holdMicros = 200

// cacheDir keeps the compiled Java peer and the Python script for the
// whole test run (one javac per run).
var cacheDir string

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(childMain(spec))
	}
	goleak.VerifyTestMain(run{zktest.Wrap(m)})
}

type run struct{ inner interface{ Run() int } }

func (r run) Run() int {
	dir, err := os.MkdirTemp("", "tierlock-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cacheDir = dir
	defer os.RemoveAll(dir)
	return r.inner.Run()
}

// member is one process of a fleet.
type member struct {
	family  string
	threads int
}

// requirePeers fails the test, naming the install script, when a peer
// runtime is missing: a mixed-fleet test that skips proves nothing.
func requirePeers(t *testing.T, members []member) {
	t.Helper()
	for _, m := range members {
		if kind, _ := peerKind(m.family); kind != "" {
			if err := peers.Check(kind); err != nil {
				t.Fatalf("%s: %v", m.family, err)
			}
		}
	}
}

// startPeer starts kind in serve mode, one thread on path, closed when the
// test ends.
func startPeer(t *testing.T, ctx context.Context, kind peers.Kind, servers []string, path string, flags ...string) *peers.Proc {
	t.Helper()
	if err := peers.Check(kind); err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
	p, err := peers.Serve(ctx, kind, cacheDir, servers, 10*time.Second, 1, []string{path}, flags...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// peerKind maps a family to its peer and options; "" for Go families.
func peerKind(family string) (peers.Kind, []string) {
	switch family {
	case famCurator:
		return peers.Curator, nil
	case famKazoo:
		return peers.Kazoo, nil
	case famKazooNoExtra:
		return peers.Kazoo, []string{peers.KazooNoExtra}
	case famKazooRead:
		return peers.Kazoo, []string{peers.KazooRead}
	}
	return "", nil
}

// startBarrier is a member's side of the start barrier: with end 0, the
// member, connected, creates <file>.ready.<label> and waits for <file>.go,
// which holds the end of the window (unix ms) that runFleet sets once every
// member is ready. So a member that starts slowly (a JVM on a busy machine)
// still has the whole window, and every member contends from its start.
// The Curator and kazoo peers do the same (internal/peers).
func startBarrier(ctx context.Context, end int64, file, label string) (int64, error) {
	if end != 0 {
		return end, nil
	}
	if err := os.WriteFile(file+".ready."+label, nil, 0o644); err != nil {
		return 0, err
	}
	for {
		if b, err := os.ReadFile(file + ".go"); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("start barrier: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// openWindow is runFleet's side of the start barrier: once n members are
// ready it writes the end of the window, d from now, into <file>.go
// (renamed into place, so that a member never reads it half written).
func openWindow(t *testing.T, file string, n int, d time.Duration) {
	t.Helper()
	zktest.Eventually(t, 2*time.Minute, "every member connected", func() bool {
		ready, _ := filepath.Glob(file + ".ready.*")
		return len(ready) >= n
	})
	end := strconv.FormatInt(time.Now().Add(d).UnixMilli(), 10)
	if err := os.WriteFile(file+".go.tmp", []byte(end), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".go.tmp", file+".go"); err != nil {
		t.Fatal(err)
	}
}

// runFleet runs members on one fresh lock path for about d (every member
// stops acquiring at the same wall-clock time, the window opening once
// every member is ready: see startBarrier) and checks the records.
func runFleet(t *testing.T, d time.Duration, members ...member) outcome {
	t.Helper()
	return runFleetAt(t, fleet{servers: zktest.Servers(t), path: zktest.Path(t)}, d, members...)
}

// fleet is where a fleet's members lock: the servers, a chroot ("":
// none) and the lock path, under the chroot.
type fleet struct {
	servers      []string
	chroot, path string
}

// command returns member m's command: a peer, or a Go member (the test
// binary run again). tierlock and kazoo take the chroot after the last
// server, Curator as its namespace; go-zookeeper has none.
func (f fleet) command(t *testing.T, ctx context.Context, m member, file, label string) *exec.Cmd {
	t.Helper()
	servers := slices.Clone(f.servers)
	servers[len(servers)-1] += f.chroot
	if kind, flags := peerKind(m.family); kind != "" {
		if kind == peers.Curator && f.chroot != "" {
			flags, servers = append(flags, peers.CuratorNamespace(f.chroot[1:])), f.servers
		}
		args := append(flags, "loop", strings.Join(servers, ","), f.path, strconv.Itoa(m.threads),
			"0", strconv.Itoa(holdMicros), file, label) // end 0: the start barrier sets the window (openWindow)
		cmd, err := peers.Command(ctx, kind, cacheDir, args...)
		if err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	if f.chroot != "" && (m.family == famGozk || m.family == famZkcompat) {
		t.Fatalf("%s: go-zookeeper takes no chroot", m.family)
	}
	spec, _ := json.Marshal(childSpec{Family: m.family, Servers: servers, Path: f.path, Goroutines: m.threads,
		File: file, Label: label})
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	return cmd
}

// runFleetAt is runFleet at f.
func runFleetAt(t *testing.T, f fleet, d time.Duration, members ...member) outcome {
	t.Helper()
	requirePeers(t, members)
	file := t.TempDir() + "/records"
	ctx, cancel := context.WithTimeout(context.Background(), d+2*time.Minute)
	defer cancel()

	type proc struct {
		label  string
		cmd    *exec.Cmd
		stdout strings.Builder
		stderr strings.Builder
	}
	var procs []*proc
	for i, m := range members {
		p := &proc{label: fmt.Sprintf("%s:%d", m.family, i)}
		p.cmd = f.command(t, ctx, m, file, p.label)
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", p.label, err)
		}
		procs = append(procs, p)
	}
	openWindow(t, file, len(procs), d)
	var failed []string
	for _, p := range procs {
		if err := p.cmd.Wait(); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v\n%s", p.label, err, lastLines(p.stderr.String(), 15)))
		}
	}
	if len(failed) > 0 {
		t.Fatalf("members failed:\n%s", strings.Join(failed, "\n"))
	}
	records, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer records.Close()
	o, err := check(records)
	if err != nil {
		t.Fatalf("records: %v", err)
	}
	// Each member's own count must match what the file says.
	for _, p := range procs {
		fam, _, _ := strings.Cut(p.label, ":")
		if o.holds[fam] == 0 {
			t.Errorf("%s recorded no hold (its output: %q)", p.label, strings.TrimSpace(p.stdout.String()))
		}
	}
	return o
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

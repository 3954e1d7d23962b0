package interop_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/peers"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zkcompat"
	"github.com/tierlock/tierlock/zklock"
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

// childSpec tells a Go member what to do.
type childSpec struct {
	Family     string   `json:"family"`
	Servers    []string `json:"servers"`
	Path       string   `json:"path"`
	Goroutines int      `json:"goroutines"`
	End        int64    `json:"end"` // unix ms: stop acquiring; 0: wait at the start barrier (startBarrier)
	File       string   `json:"file"`
	Label      string   `json:"label"`
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// childMain is a Go member: its goroutines acquire and release until
// spec.End, appending "E <label> <pid> <goroutine>" after each acquisition
// and "X ..." before each release to the shared file, one write(2) each on
// an O_APPEND descriptor, and print "holds <n>" at the end.
func childMain(specJSON string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "bad", childEnv, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f, err := os.OpenFile(spec.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	lockers, closeAll, err := goMember(ctx, spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, spec.Family, err)
		return 1
	}
	if spec.End, err = startBarrier(ctx, spec.End, spec.File, spec.Label); err != nil {
		fmt.Fprintln(os.Stderr, spec.Family, err)
		return 1
	}
	pid := os.Getpid()
	var holds atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, spec.Goroutines)
	for g := range spec.Goroutines {
		lock, unlock := lockers(g)
		enter := []byte(fmt.Sprintf("E %s %d %d\n", spec.Label, pid, g))
		exit := []byte(fmt.Sprintf("X %s %d %d\n", spec.Label, pid, g))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().UnixMilli() < spec.End {
				if err := lock(ctx); err != nil {
					errs <- fmt.Errorf("lock: %w", err)
					return
				}
				_, _ = f.Write(enter)
				time.Sleep(holdMicros * time.Microsecond)
				_, _ = f.Write(exit)
				if err := unlock(); err != nil {
					errs <- fmt.Errorf("unlock: %w", err)
					return
				}
				holds.Add(1)
			}
		}()
	}
	wg.Wait()
	closeAll()
	close(errs)
	for err := range errs {
		fmt.Fprintln(os.Stderr, spec.Family, err)
		return 1
	}
	fmt.Printf("holds %d\n", holds.Load())
	return 0
}

// goMember connects a Go member and returns, per goroutine, its lock and
// unlock, and what closes everything.
func goMember(ctx context.Context, spec childSpec) (func(g int) (func(context.Context) error, func() error), func(), error) {
	switch spec.Family {
	case famTier, famTierHandoff:
		s, err := zklock.Connect(ctx, spec.Servers, zklock.WithLogger(quiet))
		if err != nil {
			return nil, nil, err
		}
		var opts []tier.Option
		if spec.Family == famTierHandoff {
			opts = append(opts, tier.WithHandoff(64, 50*time.Millisecond))
		}
		l, err := tier.New(s, spec.Path, opts...)
		if err != nil {
			s.Close()
			return nil, nil, err
		}
		return func(int) (func(context.Context) error, func() error) {
				var held context.Context
				return func(ctx context.Context) (err error) {
						held, err = l.Acquire(ctx)
						return err
					}, func() error {
						return l.Release(held)
					}
			}, func() {
				l.Close()
				s.Close()
			}, nil
	case famGozk, famZkcompat:
		conn, events, err := zk.Connect(spec.Servers, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(discard{}))
		if err != nil {
			return nil, nil, err
		}
		go func() {
			for range events { // go-zookeeper drops events nobody reads; read them anyway
			}
		}()
		acl := zk.WorldACL(zk.PermAll)
		return func(int) (func(context.Context) error, func() error) {
				if spec.Family == famGozk {
					l := zk.NewLock(conn, spec.Path, acl)
					return func(context.Context) error { return l.Lock() }, l.Unlock
				}
				l := zkcompat.NewLock(conn, spec.Path, acl)
				return l.LockContext, l.Unlock
			}, func() {
				zkcompat.CloseConn(conn)
				conn.Close()
			}, nil
	}
	return nil, nil, fmt.Errorf("unknown Go family %q", spec.Family)
}

type discard struct{}

func (discard) Printf(string, ...any) {}

// member is one process of a fleet.
type member struct {
	family  string
	threads int
}

// outcome is what the checker found in a fleet's records.
type outcome struct {
	holds      map[string]int // by family
	total      int
	violations int            // enters while another holder had not left
	pairs      map[string]int // violations by the two families involved
	examples   []string
}

func (o outcome) String() string {
	var fams []string
	for f, n := range o.holds {
		fams = append(fams, fmt.Sprintf("%s %d", f, n))
	}
	sort.Strings(fams)
	s := fmt.Sprintf("%d violations in %d holds (%s)", o.violations, o.total, strings.Join(fams, ", "))
	if len(o.pairs) > 0 {
		var ps []string
		for p, n := range o.pairs {
			ps = append(ps, fmt.Sprintf("%s: %d", p, n))
		}
		sort.Strings(ps)
		s += "; overlapping families: " + strings.Join(ps, ", ")
	}
	return s
}

// check is the independent checker: it reads the shared record file, in
// the order the kernel appended it, and counts every enter made while
// another holder had entered and not yet left. A holder writes its enter
// after its lock said it holds and its exit before it releases, so in a
// run without overlap the records alternate strictly.
func check(r io.Reader) (outcome, error) {
	o := outcome{holds: map[string]int{}, pairs: map[string]int{}}
	inside := map[string]bool{} // holders between enter and exit: "label pid goroutine"
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || (f[0] != "E" && f[0] != "X") {
			return o, fmt.Errorf("record %d: %q is not a record", n, sc.Text())
		}
		who := strings.Join(f[1:], " ")
		fam, _, _ := strings.Cut(f[1], ":")
		if f[0] == "X" {
			if !inside[who] {
				return o, fmt.Errorf("record %d: %s leaves without having entered", n, who)
			}
			delete(inside, who)
			continue
		}
		if inside[who] {
			return o, fmt.Errorf("record %d: %s enters twice", n, who)
		}
		o.total++
		o.holds[fam]++
		if len(inside) > 0 {
			o.violations++
			for other := range inside {
				ofam, _, _ := strings.Cut(other, ":")
				pair := []string{fam, ofam}
				slices.Sort(pair)
				o.pairs[pair[0]+"+"+pair[1]]++
				if len(o.examples) < 5 {
					o.examples = append(o.examples, fmt.Sprintf("record %d: %s entered while %s held", n, who, other))
				}
			}
		}
		inside[who] = true
	}
	if len(inside) > 0 {
		return o, fmt.Errorf("holders never left: %v", inside)
	}
	return o, sc.Err()
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

// runFleet runs members on one fresh lock path for about d (every member
// stops acquiring at the same wall-clock time; the JVM starts slower, so
// the first 1.5 s are for starting) and checks the records.
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

func runFleet(t *testing.T, d time.Duration, members ...member) outcome {
	t.Helper()
	requirePeers(t, members)
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	file := t.TempDir() + "/records"
	const end = 0 // the start barrier sets the window (openWindow)
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
		if kind, flags := peerKind(m.family); kind != "" {
			args := append(flags, "loop", strings.Join(servers, ","), path, strconv.Itoa(m.threads),
				strconv.FormatInt(end, 10), strconv.Itoa(holdMicros), file, p.label)
			cmd, err := peers.Command(ctx, kind, cacheDir, args...)
			if err != nil {
				t.Fatal(err)
			}
			p.cmd = cmd
		} else {
			spec, _ := json.Marshal(childSpec{Family: m.family, Servers: servers, Path: path, Goroutines: m.threads,
				End: end, File: file, Label: p.label})
			p.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			p.cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
		}
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
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o, err := check(f)
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

// requireExclusion fails with the checker's findings, naming the
// families whose holds overlapped.
func requireExclusion(t *testing.T, o outcome) {
	t.Helper()
	t.Logf("checked: %v", o)
	if o.violations > 0 {
		t.Fatalf("mutual exclusion violated: %v\nfirst ones:\n  %s", o, strings.Join(o.examples, "\n  "))
	}
	if o.total < 100 {
		t.Fatalf("only %d holds: too few to prove anything", o.total)
	}
}

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
)

// TestMain runs the tests against one real ZooKeeper, and goleak checks
// that nothing is left running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(zktest.Wrap(m))
}

// readmeBlocks returns the ```sh and ```go blocks of cronlock's README,
// in its section "Ten jobs".
func readmeBlocks(t *testing.T) (sh, program string) {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const title = "\n## Ten jobs\n"
	_, section, ok := strings.Cut(string(readme), title)
	if !ok {
		t.Fatalf("cronlock/README.md has no section %q", strings.TrimSpace(title))
	}
	section, _, _ = strings.Cut(section, "\n## ")
	block := func(lang string) string {
		_, b, ok := strings.Cut(section, "```"+lang+"\n")
		if ok {
			b, _, ok = strings.Cut(b, "```")
		}
		if !ok {
			t.Fatalf("cronlock/README.md's section on ten jobs has no ```%s block", lang)
		}
		return b
	}
	return block("sh"), block("go")
}

// cronlock's README program is this one, word for word, so that the
// program the README shows is the one these tests run.
func TestReadmeIsThisProgram(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if _, program := readmeBlocks(t); program != string(src) {
		t.Error("cronlock/README.md's program differs from cronlock/examples/tenjobs/main.go: copy main.go into it")
	}
}

// TestReadmeTenJobs (issue 45): a new user tries cronlock's README alone.
// In a new directory, its program as main.go and its commands, the
// checkout's path for /path/to/tierlock; two copies of the program run at
// once for 5 s, started 300 ms apart, and stop on Ctrl-C (SIGINT): every
// tick of each of the ten jobs runs once, in one copy or the other, and
// both exit with status 0. Then the same program with one change a new
// user might make, the jobs added without cronlock.Named: no job runs, and
// each is told once.
func TestReadmeTenJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program in a module of its own")
	}
	sh, program := readmeBlocks(t)
	const named = `c.AddJob("* * * * * *", cronlock.Named(name, job))`
	if !strings.Contains(program, named) {
		t.Fatalf("README's program lacks %s, which the test leaves out", named)
	}
	checkout, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	good := build(t, sh, program, checkout)
	bad := build(t, sh, strings.Replace(program, named, `c.AddJob("* * * * * *", job)`, 1), checkout)
	servers := strings.Join(zktest.Servers(t), ",")

	t.Run("two copies", func(t *testing.T) {
		start := time.Now()
		a := run(t, good, servers)
		time.Sleep(300 * time.Millisecond)
		b := run(t, good, servers)
		time.Sleep(5 * time.Second)
		outA, outB := a.stop(t), b.stop(t)
		checkRuns(t, outA+outB, a.stderr.String()+b.stderr.String(), start, time.Now().Add(-time.Second))
	})
	t.Run("a job without a name", func(t *testing.T) {
		p := run(t, bad, servers)
		time.Sleep(2500 * time.Millisecond)
		out := p.stop(t)
		if strings.Contains(out, " ran at ") {
			t.Errorf("a job without a name ran:\n%s", out)
		}
		if n := strings.Count(p.stderr.String(), "job without a name"); n != 10 {
			t.Errorf("%d lines of a job without a name, want 10, once per job:\n%s", n, p.stderr.String())
		}
	})
}

// build makes a module of the program in a new directory with README's
// commands (sh, but for its go run line), and builds it. The commands
// need nothing from the network: the module cache holds what the
// checkout's modules need (the checksum database is not asked).
func build(t *testing.T, sh, program, checkout string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	script, _, ok := strings.Cut(sh, "go run .")
	if !ok {
		t.Fatalf("README's commands do not end with go run .:\n%s", sh)
	}
	script = strings.ReplaceAll(script, "/path/to/tierlock", checkout) + "\ngo build -o tenjobs .\n"
	cmd := exec.Command("sh", "-e", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("README's commands: %v\n%s\n%s", err, script, out)
	}
	return filepath.Join(dir, "tenjobs")
}

// proc is a copy of the program running.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

// run starts the program at bin against servers.
func run(t *testing.T, bin, servers string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, strings.Split(servers, ",")...)}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	return p
}

// stop sends the program Ctrl-C's signal and returns its output once it
// has exited, with status 0.
func (p *proc) stop(t *testing.T) string {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the program stopped with %v after Ctrl-C:\n%s", err, p.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the program did not stop within 10 s of Ctrl-C:\n%s", p.stderr.String())
	}
	return p.stdout.String()
}

// ranTick matches the program's line for a run: the job, the tick it ran
// (its scheduled second, as the Locker claimed it) and when it started.
var ranTick = regexp.MustCompile(`^(job-\d) ran tick (\d\d:\d\d:\d\d) at (\d\d:\d\d:\d\d)\.\d{3}$`)

// checkRuns fails t for each fault runFaults finds in out, the programs'
// output, the first started at start; logs are their standard error.
func checkRuns(t *testing.T, out, logs string, start, to time.Time) {
	t.Helper()
	faults, notes := runFaults(out, logs, start, to)
	for _, f := range faults {
		t.Error(f)
	}
	if len(faults) > 0 {
		t.Logf("the copies' logs:\n%s", logs)
	}
	for _, n := range notes {
		t.Log(n)
	}
}

// runFaults checks the runs in out: the programs ran their first tick
// within 3 s of start, no tick of a job ran twice, whatever the load (the
// program claims each tick by its name: robfig/cron's schedule, the Cron
// attached), and every tick of the ten jobs from the first to the second
// of to ran, unless a copy said it lost that job's ticks (logs: "tick
// lost" or "job's tick late" naming the job, a "run skipped: lock failed"
// of the job, or "ZooKeeper unreachable", which fails every job's ticks;
// the program keeps no per-tick outcome, and runonce tells such losses
// once per episode and job). "overloaded" alone names no job, and tells
// no tick lost. Beside make test's other steps a copy's claims can outlast
// their window (idle make test run 106: two ticks of 40 ran nowhere), and
// the Locker says so of each job.
func runFaults(out, logs string, start, to time.Time) (faults, notes []string) {
	runs, first, faults := parseRuns(out)
	from := start.Truncate(time.Second).Add(time.Second)
	for from.Format("15:04:05") != first && from.Before(start.Add(3*time.Second)) {
		from = from.Add(time.Second)
	}
	if from.Format("15:04:05") != first {
		return append(faults, fmt.Sprintf("the first run at %q, want within 3 s of the start (%s)", first, start.Format("15:04:05.000"))), notes
	}
	for key, n := range runs {
		if n > 1 {
			faults = append(faults, fmt.Sprintf("%s ran %d times, want once", key, n))
		}
	}
	told := lostSaid(logs)
	ticks, lost := 0, 0
	for tick := from; !tick.After(to); tick = tick.Add(time.Second) {
		ticks++
		for i := range 10 {
			key := "job-" + string(rune('0'+i)) + " " + tick.Format("15:04:05")
			switch {
			case runs[key] > 0:
			case told["job-"+string(rune('0'+i))]:
				lost++
			default:
				faults = append(faults, fmt.Sprintf("%s ran nowhere, and no copy said it lost ticks", key))
			}
		}
	}
	if lost > 0 {
		notes = append(notes, fmt.Sprintf("%d ticks ran nowhere, the copies having said they lost ticks", lost))
	}
	slices.Sort(faults)
	return faults, append(notes, fmt.Sprintf("%d runs of 10 jobs; %d ticks checked", len(runs), ticks))
}

// lostSaid returns the jobs whose ticks logs, the copies' logs, say may
// be lost; "*" for every job (ZooKeeper unreachable).
func lostSaid(logs string) map[string]bool {
	told := map[string]bool{}
	all := strings.Contains(logs, "WARN ZooKeeper unreachable")
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, "WARN tick lost") && !strings.Contains(line, "WARN job's tick late") && !strings.Contains(line, "WARN run skipped: lock failed") {
			continue
		}
		if _, v, ok := strings.Cut(line, " job="); ok {
			v, _, _ = strings.Cut(v, " ")
			told[v] = true
		}
	}
	for i := range 10 {
		told["job-"+string(rune('0'+i))] = told["job-"+string(rune('0'+i))] || all
	}
	return told
}

// parseRuns counts the runs in out by job and tick ("job-3 12:00:01"),
// with the first tick run and a fault for each line not a run's.
func parseRuns(out string) (runs map[string]int, first string, faults []string) {
	runs = map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		m := ranTick.FindStringSubmatch(line)
		if m == nil {
			faults = append(faults, fmt.Sprintf("unexpected line %q", line))
			continue
		}
		runs[m[1]+" "+m[2]]++
		if first == "" || m[2] < first {
			first = m[2]
		}
	}
	return runs, first, faults
}

// TestRunFaultsRefuse seeds the README program's judge: a tick run twice
// fails it even where a copy said "overloaded" (it passed it before), a
// tick run nowhere fails it where no copy said it lost ticks, and passes
// where one did.
func TestRunFaultsRefuse(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 500e6, time.UTC)
	to := start.Add(2 * time.Second)
	var lines []string
	for s := 1; s <= 2; s++ {
		for i := range 10 {
			lines = append(lines, fmt.Sprintf("job-%d ran tick 12:00:%02d at 12:00:%02d.010", i, s, s))
		}
	}
	out := strings.Join(lines, "\n")
	double := out + "\njob-3 ran tick 12:00:01 at 12:00:02.100"
	lost := strings.Replace(out, "job-3 ran tick 12:00:02 at 12:00:02.010\n", "", 1)
	for _, tc := range []struct {
		name, out, logs, want string
	}{
		{"every tick once", out, "", ""},
		{"a tick run twice, the copies overloaded", double, "2026/11/29 12:00:02 WARN overloaded: runs start late", "ran 2 times"},
		{"a tick lost, nothing said", lost, "", "ran nowhere"},
		{"a tick lost, a tick lost said", lost, "2026/11/29 12:00:02 WARN tick lost job=job-3 holder=x", ""},
		{"a tick lost, only overloaded said", lost, "2026/11/29 12:00:02 WARN overloaded: runs start late", "ran nowhere"},
		{"a tick lost, another job's loss said", lost, "2026/11/29 12:00:02 WARN tick lost job=job-4 holder=x", "ran nowhere"},
	} {
		faults, _ := runFaults(tc.out, tc.logs, start, to)
		got := strings.Join(faults, "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: faults %q, want %q", tc.name, got, tc.want)
		}
	}
}

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeSection returns the text of README's section under the level-2
// heading title, up to the next level-2 heading.
func readmeSection(t *testing.T, title string) string {
	t.Helper()
	return section(t, "../../README.md", title)
}

// section returns the text of file's section under the level-2 heading
// title, up to the next level-2 heading.
func section(t *testing.T, file, title string) string {
	t.Helper()
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("%s has no %q section", file, "## "+title)
	}
	sec, _, _ := strings.Cut(after, "\n## ")
	return sec
}

// README's quick start is this program, word for word: the README block
// between "```go" and "```" under "## Quick start" must equal main.go, so
// that what a reader pastes compiles (main.go does) and runs (below).
func TestReadmeQuickStartIsThisProgram(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(readmeSection(t, "Quick start"), "```go\n")
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("README's quick start has no ```go block")
	}
	if block != string(src) {
		t.Errorf("README's quick start differs from examples/quickstart/main.go: copy main.go into README")
	}
}

// README's quick start begins by starting ZooKeeper: its first code block,
// before the program, runs scripts/zk.sh start, so that a reader who
// follows it in order does not meet "connection refused" first.
func TestReadmeQuickStartStartsZooKeeper(t *testing.T) {
	section := readmeSection(t, "Quick start")
	_, first, ok := strings.Cut(section, "```")
	if ok {
		first, _, ok = strings.Cut(first, "```")
	}
	if !ok || !strings.HasPrefix(first, "sh\n") || !strings.Contains(first, "scripts/zk.sh start") {
		t.Errorf("README's quick start does not begin with a ```sh block that runs scripts/zk.sh start; its first block:\n%s", first)
	}
}

// README's install says what works from a checkout today, beside go get
// (which works once the module is published): a replace directive in the
// user's go.mod, or a go.work that uses the checkout.
func TestReadmeInstallFromCheckout(t *testing.T) {
	section := readmeSection(t, "Install")
	for _, want := range []string{
		"go get github.com/tierlock/tierlock@latest",
		"published",
		"replace github.com/tierlock/tierlock => /path/to/tierlock",
		"go work init",
		"go work use /path/to/tierlock",
		// gocronlock is a module of its own: both replaces (issue 39).
		"-replace github.com/tierlock/tierlock/gocronlock=/path/to/tierlock/gocronlock",
		"-require github.com/tierlock/tierlock/gocronlock@v0.0.0",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("README's install lacks %q:\n%s", want, section)
		}
	}
}

// docs/benchmarks.md's speed in short, where README points for speed,
// states the whole matrix's spread: the median ratio of each topology
// with its range, as docs/matrix.md's table has them.
func TestBenchmarksStateSpread(t *testing.T) {
	doc, err := os.ReadFile("../../docs/matrix.md")
	if err != nil {
		t.Fatal(err)
	}
	const row = "| strict / `zk.Lock`, median (range) |"
	_, line, ok := strings.Cut(string(doc), "\n"+row)
	if !ok {
		t.Fatalf("docs/matrix.md has no row %q", row)
	}
	line, _, _ = strings.Cut(line, "\n")
	speed := section(t, "../../docs/benchmarks.md", "Speed in short")
	cells := strings.Split(strings.Trim(line, " |"), "|")
	if len(cells) != 2 {
		t.Fatalf("docs/matrix.md's row %q: %d cells, want standalone and ensemble", row, len(cells))
	}
	for _, cell := range cells {
		// "1.39× (0.60–14.01)": the median, and the range.
		median, spread, ok := strings.Cut(strings.TrimSpace(cell), " (")
		spread = strings.TrimSuffix(spread, ")")
		if !ok || median == "" || spread == "" {
			t.Fatalf("docs/matrix.md: cell %q is not median (range)", cell)
		}
		if !strings.Contains(speed, median) || !strings.Contains(speed, spread) {
			t.Errorf("docs/benchmarks.md's speed in short lacks the median %s with its range %s (docs/matrix.md)", median, spread)
		}
	}
}

// Every test README names (pkg.TestName, in backquotes) is a test of the
// repository: a promise whose test was renamed or removed fails here.
func TestReadmeNamesRealTests(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`(?:[a-z]+\\.)?(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(readme), -1)
	if len(named) < 10 {
		t.Fatalf("README names %d tests: its guarantees name theirs", len(named))
	}
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	err = filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return err
		}
		src, err := os.ReadFile(p)
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range named {
		if !defined[m[1]] {
			t.Errorf("README names %s, which no test file defines", m[0])
		}
	}
}

// README stays a page a newcomer reads (issue 51): at most 200 lines, a
// map of what, install, the quick start of the core use, the parts, a
// line per guarantee, configuration and the two commands; depth and
// figures live in docs/ and in the adapters' READMEs.
func TestReadmeShort(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 200 {
		t.Errorf("README has %d lines, want at most 200: move depth into docs/", n)
	}
}

package main

import (
	"os"
	"strings"
	"testing"
)

// readmeSection returns the text of README's section under the level-2
// heading title, up to the next level-2 heading.
func readmeSection(t *testing.T, title string) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("README has no %q section", "## "+title)
	}
	section, _, _ := strings.Cut(after, "\n## ")
	return section
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

// README's headline speed figure states its spread: the median ratio of
// each topology with its range, as docs/matrix.md's table has them.
func TestReadmeSpeedStatesSpread(t *testing.T) {
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
	speed := readmeSection(t, "Speed")
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
			t.Errorf("README's Speed section lacks the median %s with its range %s (docs/matrix.md)", median, spread)
		}
	}
}

// README stays a page a newcomer reads (issue 39, item 7): at most 250
// lines; depth lives in docs/ and in the adapters' READMEs (robfig/cron's
// program of ten jobs is in cronlock/README.md).
func TestReadmeShort(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 250 {
		t.Errorf("README has %d lines, want at most 250: move depth into docs/", n)
	}
}

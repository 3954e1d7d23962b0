package repocheck

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// TestMarkdownLinksResolve: every relative link in a tracked Markdown
// file, README.md and docs/ first (inline links and images, reference
// definitions, href and src attributes), names a file or directory of the
// checkout, and its #fragment, when it points into a Markdown file, one
// of that file's headings as GitHub names their anchors.
func TestMarkdownLinksResolve(t *testing.T) {
	root := repoRoot(t)
	files := markdownFiles(t, root)
	if len(files) == 0 {
		t.Fatal("no Markdown file found")
	}
	n, broken := checkLinks(root, files)
	t.Logf("%d relative links in %d Markdown files", n, len(files))
	for _, b := range broken {
		t.Error(b)
	}
}

// TestCheckLinksFindsBroken: the checker reports a missing file, a
// missing heading, a link out of the checkout, and nothing else: not an
// external link, a link inside code, or a good one.
func TestCheckLinksFindsBroken(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/b.md", "# B\n\n## The `zk.Lock` way: 10^4 keys\n\n## Again\n\n## Again\n")
	write("docs/img.png", "")
	write("a.md", strings.Join([]string{
		"# Top",
		"[good](docs/b.md) [dir](docs) ![img](docs/img.png \"title\") [anchor](docs/b.md#the-zklock-way-104-keys)",
		"[dup](docs/b.md#again-1) [self](#top) [ext](https://example.com/x) [mail](mailto:a@b)",
		"`[code](missing-in-code.md)` and [gone](docs/gone.md)",
		"[bad anchor](docs/b.md#nowhere) [out](../outside.md) [root](/docs/b.md)",
		"```",
		"[fenced](missing-in-fence.md)",
		"```",
		"[ref]: docs/missing-ref.md",
		`<img src="docs/missing.png">`,
	}, "\n"))
	n, broken := checkLinks(root, []string{"a.md"})
	want := []string{
		`a.md:4: "docs/gone.md": no such file`,
		`a.md:5: "docs/b.md#nowhere": docs/b.md has no heading with the anchor "nowhere"`,
		`a.md:5: "../outside.md": outside the repository`,
		`a.md:9: "docs/missing-ref.md": no such file`,
		`a.md:10: "docs/missing.png": no such file`,
	}
	if strings.Join(broken, "\n") != strings.Join(want, "\n") {
		t.Errorf("broken links:\n%s\nwant:\n%s", strings.Join(broken, "\n"), strings.Join(want, "\n"))
	}
	if n != 12 {
		t.Errorf("checked %d relative links, want 12", n)
	}
}

// markdownFiles lists the checkout's Markdown files: those git tracks
// (or is about to), or, without git, every one under root.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	all, err := treeFiles(root)
	if errors.Is(err, errNoGit) {
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				if err == nil && d.Name() == ".git" {
					return filepath.SkipDir
				}
				return err
			}
			rel, err := filepath.Rel(root, p)
			all = append(all, filepath.ToSlash(rel))
			return err
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	var md []string
	for _, p := range all {
		if strings.EqualFold(filepath.Ext(p), ".md") {
			md = append(md, p)
		}
	}
	sort.Strings(md)
	return md
}

var (
	// inlineLink is [text](target "title") or ![alt](<target>): the
	// target in group 1.
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// refDefinition is "[label]: target" at the start of a line.
	refDefinition = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	// htmlLink is an href or src attribute.
	htmlLink = regexp.MustCompile(`\b(?:href|src)\s*=\s*"([^"]*)"`)
	// scheme starts an absolute URL (https:, mailto:).
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// fence opens or closes a fenced code block: the fence in group 1,
	// what follows it (an opening fence's info string) in group 2.
	fence = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")
)

// checkLinks checks every relative link of files (slash paths under
// root) and returns how many it checked and what is broken, one line
// each, as "file:line: target: why".
func checkLinks(root string, files []string) (int, []string) {
	a := anchorIndex{root: root, byFile: make(map[string]map[string]bool)}
	n := 0
	var broken []string
	for _, file := range files {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			broken = append(broken, fmt.Sprintf("%s: %v", file, err))
			continue
		}
		for _, l := range linksIn(string(data)) {
			if scheme.MatchString(l.target) || strings.HasPrefix(l.target, "//") {
				continue // external
			}
			n++
			if why := a.check(file, l.target); why != "" {
				broken = append(broken, fmt.Sprintf("%s:%d: %q: %s", file, l.line, l.target, why))
			}
		}
	}
	return n, broken
}

// link is one link target and the line it is on.
type link struct {
	line   int
	target string
}

// linksIn returns the link targets of a Markdown text in order, outside
// fenced code blocks and code spans.
func linksIn(text string) []link {
	var links []link
	for _, l := range proseLines(text) {
		line := withoutCodeSpans(l.text)
		var targets []string
		for _, re := range []*regexp.Regexp{inlineLink, refDefinition, htmlLink} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				targets = append(targets, strings.Trim(m[1], "<>"))
			}
		}
		for _, target := range targets {
			links = append(links, link{line: l.n, target: target})
		}
	}
	return links
}

// proseLine is a line of a Markdown text and its number.
type proseLine struct {
	n    int
	text string
}

// proseLines returns the lines of a Markdown text that are outside fenced
// code blocks, the fences left out too.
func proseLines(text string) []proseLine {
	var lines []proseLine
	var open string // the fence of the code block we are in, if any
	for i, line := range strings.Split(text, "\n") {
		m := fence.FindStringSubmatch(line)
		switch {
		case m != nil && open == "":
			open = m[1]
		case m != nil && m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(m[2]) == "":
			open = "" // a closing fence: at least as long, no info string
		case open == "":
			lines = append(lines, proseLine{n: i + 1, text: line})
		}
	}
	return lines
}

// withoutCodeSpans blanks the code spans of a line: a run of backticks
// up to the next run of the same length. An unmatched run is text.
func withoutCodeSpans(line string) string {
	var b strings.Builder
	for {
		start := strings.IndexByte(line, '`')
		if start < 0 {
			return b.String() + line
		}
		n := start
		for n < len(line) && line[n] == '`' {
			n++
		}
		ticks := line[start:n]
		end := closingTicks(line[n:], ticks)
		if end < 0 {
			b.WriteString(line[:n])
			line = line[n:]
			continue
		}
		b.WriteString(line[:start] + " ")
		line = line[n+end+len(ticks):]
	}
}

// closingTicks returns where in s a run of exactly ticks begins, or -1.
func closingTicks(s, ticks string) int {
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], ticks)
		if j < 0 {
			return -1
		}
		at := i + j
		end := at + len(ticks)
		if (at == 0 || s[at-1] != '`') && (end == len(s) || s[end] != '`') {
			return at
		}
		for end < len(s) && s[end] == '`' {
			end++
		}
		i = end
	}
	return -1
}

// anchorIndex resolves link targets under root and knows the heading
// anchors of the Markdown files it has read.
type anchorIndex struct {
	root   string
	byFile map[string]map[string]bool
}

// check returns why target, a relative link in file, does not resolve,
// or "" if it does.
func (a anchorIndex) check(file, target string) string {
	target, _, _ = strings.Cut(target, "?")
	p, frag, _ := strings.Cut(target, "#")
	p, err := url.PathUnescape(p)
	if err != nil {
		return err.Error()
	}
	var abs string
	switch {
	case p == "":
		abs = filepath.Join(a.root, filepath.FromSlash(file))
	case strings.HasPrefix(p, "/"): // GitHub resolves these from the repository's root
		abs = filepath.Join(a.root, filepath.FromSlash(p))
	default:
		abs = filepath.Join(a.root, filepath.FromSlash(file), "..", filepath.FromSlash(p))
	}
	rel, err := filepath.Rel(a.root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "outside the repository"
	}
	info, err := os.Stat(abs)
	if err != nil {
		return "no such file"
	}
	if frag == "" || info.IsDir() || !strings.EqualFold(filepath.Ext(abs), ".md") {
		return "" // a fragment into another kind of file (a line: #L10) is not checked
	}
	anchors, err := a.anchors(abs)
	if err != nil {
		return err.Error()
	}
	if frag, err = url.PathUnescape(frag); err != nil || !anchors[strings.ToLower(frag)] {
		return fmt.Sprintf("%s has no heading with the anchor %q", filepath.ToSlash(rel), frag)
	}
	return ""
}

// atxHeading is a "#" heading; its text in group 1. (The documents use
// no underlined headings: a link to one would be reported missing.)
var atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)

// anchors returns the anchors GitHub gives the headings of the Markdown
// file at abs.
func (a anchorIndex) anchors(abs string) (map[string]bool, error) {
	if got, ok := a.byFile[abs]; ok {
		return got, nil
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, err
	}
	got := make(map[string]bool)
	seen := make(map[string]int)
	for _, l := range proseLines(string(data)) {
		m := atxHeading.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			got[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			got[s] = true
		}
		seen[s]++
	}
	a.byFile[abs] = got
	return got, nil
}

// linkInHeading is a link inside a heading, whose text alone is shown.
var linkInHeading = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// slug is GitHub's anchor for a heading: its shown text in lower case,
// spaces as hyphens, and every character that is not a letter, a digit,
// a mark, "-" or "_" left out.
func slug(heading string) string {
	heading = linkInHeading.ReplaceAllString(strings.TrimSpace(heading), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

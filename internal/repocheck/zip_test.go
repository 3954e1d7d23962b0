package repocheck

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// maxZipBytes is the most the library's module zip may weigh (issue 45):
// the bytes go get downloads and keeps in the module cache.
const maxZipBytes = 2_000_000

// zipVersion is the version the measured zip is built for. Every entry's
// name carries "module@version/" twice (its local header and the central
// directory), so the version's length counts: a pseudo-version, which is
// how go get names an untagged commit, is the longest a real one gets.
var zipVersion = module.Version{Path: libraryModule, Version: "v0.0.0-20260101000000-0123456789ab"}

// moduleZip builds the library's module zip from the work tree at root
// with cmd/go's rules (golang.org/x/mod/zip, which cmd/go uses): from
// the files treeFiles lists, Create leaves out every directory holding a
// go.mod of its own (a nested module: gocronlock, docs/bench, this
// module, and any added later), vendored packages and symbolic links, and
// refuses paths a module may not hold. Without git, it takes the
// directory as it stands (CreateFromDir), ignored files included.
func moduleZip(t *testing.T, root string) []byte {
	t.Helper()
	var buf bytes.Buffer
	paths, err := treeFiles(root)
	switch {
	case errors.Is(err, errNoGit):
		t.Logf("%s is not a git work tree: measuring the directory as it stands", root)
		err = modzip.CreateFromDir(&buf, zipVersion, root)
	case err == nil:
		files := make([]modzip.File, len(paths))
		for i, p := range paths {
			files[i] = diskFile{root: root, path: p}
		}
		err = modzip.Create(&buf, zipVersion, files)
	}
	if err != nil {
		t.Fatalf("cmd/go could not build the module zip, so go get would fail: %v", err)
	}
	return buf.Bytes()
}

// entry is one file of a module zip.
type entry struct {
	name         string // path inside the module
	zipped, size uint64 // compressed and uncompressed bytes
	crc          uint32
}

// entries lists the files of module zip z, biggest zipped first.
func entries(t *testing.T, z []byte) []entry {
	t.Helper()
	r, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatal(err)
	}
	prefix := zipVersion.Path + "@" + zipVersion.Version + "/"
	es := make([]entry, 0, len(r.File))
	for _, f := range r.File {
		es = append(es, entry{
			name:   strings.TrimPrefix(f.Name, prefix),
			zipped: f.CompressedSize64,
			size:   f.UncompressedSize64,
			crc:    f.CRC32,
		})
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].zipped != es[j].zipped {
			return es[i].zipped > es[j].zipped
		}
		return es[i].name < es[j].name
	})
	return es
}

// TestModuleZipSize: the zip go get downloads stays within maxZipBytes,
// raw benchmark output (docs/bench, a module of its own) stays out of it,
// and the library's README, docs and examples stay in. Over the limit, it
// lists the biggest files.
func TestModuleZipSize(t *testing.T) {
	root := repoRoot(t)
	z := moduleZip(t, root)
	es := entries(t, z)
	var size uint64
	in := make(map[string]bool, len(es))
	var bench []string
	for _, e := range es {
		size += e.size
		in[e.name] = true
		if strings.HasPrefix(e.name, "docs/bench/") {
			bench = append(bench, e.name)
		}
	}
	t.Logf("module zip: %d bytes, %d files, %d bytes unzipped", len(z), len(es), size)
	if len(z) > maxZipBytes {
		t.Errorf("the module zip is %d bytes, over the limit of %d (%d files, %d bytes unzipped).\n"+
			"Raw benchmark output belongs in docs/bench, a module of its own that the zip leaves out "+
			"(docs/benchmarks.md, \"Where the raw output lives\").\nThe biggest files, zipped / unzipped bytes:\n%s",
			len(z), maxZipBytes, len(es), size, biggest(es, 20))
	}
	if len(bench) > 0 {
		t.Errorf("%d files of docs/bench are in the module zip (%s, ...): docs/bench/go.mod, which keeps "+
			"raw benchmark output out of what users download, is missing", len(bench), bench[0])
	}
	for _, want := range mustStayIn(t, root) {
		if !in[want] {
			t.Errorf("%s is not in the module zip: a go.mod above it makes its directory a module of its own", want)
		}
	}
}

// mustStayIn lists files the module zip must hold: go.mod, README.md,
// every file directly under docs/ (the pages and their image), and the
// examples' programs.
func mustStayIn(t *testing.T, root string) []string {
	t.Helper()
	want := []string{"go.mod", "README.md"}
	for _, pattern := range []string{"docs/*", "examples/*/main.go"} {
		matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		if err != nil || len(matches) == 0 {
			t.Fatalf("%s: no file (%v)", pattern, err)
		}
		for _, m := range matches {
			if info, err := os.Stat(m); err == nil && !info.IsDir() {
				rel, _ := filepath.Rel(root, m)
				want = append(want, filepath.ToSlash(rel))
			}
		}
	}
	return want
}

// biggest formats the first n entries of es (biggest zipped first).
func biggest(es []entry, n int) string {
	var b strings.Builder
	for _, e := range es[:min(n, len(es))] {
		fmt.Fprintf(&b, "  %9d / %9d  %s\n", e.zipped, e.size, e.name)
	}
	return b.String()
}

// TestModuleZipMatchesGitArchive: what TestModuleZipSize measures is the
// zip cmd/go builds. On a clone of HEAD, moduleZip, x/mod's
// CreateFromVCS (git archive of the commit, as cmd/go fetches a version)
// and CreateFromDir hold the same files with the same content, and weigh
// the same.
func TestModuleZipMatchesGitArchive(t *testing.T) {
	root := repoRoot(t)
	if _, err := treeFiles(root); errors.Is(err, errNoGit) {
		t.Skip("not a git work tree: there is no commit to compare with")
	}
	head, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	// CreateFromVCS wants the repository's .git directory at the root,
	// which a linked work tree does not have: a clone of HEAD does.
	clone := t.TempDir()
	if _, err := git(root, "clone", "-q", "--shared", "--no-checkout", root, clone); err != nil {
		t.Fatal(err)
	}
	if _, err := git(clone, "checkout", "-q", head); err != nil {
		t.Fatal(err)
	}
	ours := moduleZip(t, clone)
	var vcs, dir bytes.Buffer
	if err := modzip.CreateFromVCS(&vcs, zipVersion, clone, head, ""); err != nil {
		t.Fatalf("CreateFromVCS: %v", err)
	}
	if err := modzip.CreateFromDir(&dir, zipVersion, clone); err != nil {
		t.Fatalf("CreateFromDir: %v", err)
	}
	want := byName(entries(t, ours))
	for name, other := range map[string][]byte{"CreateFromVCS": vcs.Bytes(), "CreateFromDir": dir.Bytes()} {
		if got := byName(entries(t, other)); !sameEntries(got, want) {
			t.Errorf("%s at %s holds other files than the zip measured:\n%s", name, head, diff(got, want))
		}
		if len(other) != len(ours) {
			t.Errorf("%s at %s: %d bytes, the zip measured %d", name, head, len(other), len(ours))
		}
	}
}

// byName sorts es by name.
func byName(es []entry) []entry {
	sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name })
	return es
}

// sameEntries reports whether a and b, sorted by name, hold the same
// files with the same content.
func sameEntries(a, b []entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].name != b[i].name || a[i].size != b[i].size || a[i].crc != b[i].crc {
			return false
		}
	}
	return true
}

// diff names the files only one of got and want holds, or holds with
// other content.
func diff(got, want []entry) string {
	index := func(es []entry) map[string]entry {
		m := make(map[string]entry, len(es))
		for _, e := range es {
			m[e.name] = e
		}
		return m
	}
	g, w := index(got), index(want)
	var lines []string
	for name, e := range g {
		if o, ok := w[name]; !ok {
			lines = append(lines, "  only there: "+name)
		} else if o.size != e.size || o.crc != e.crc {
			lines = append(lines, "  content differs: "+name)
		}
	}
	for name := range w {
		if _, ok := g[name]; !ok {
			lines = append(lines, "  only in the zip measured: "+name)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

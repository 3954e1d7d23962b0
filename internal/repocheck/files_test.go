package repocheck

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// libraryModule is the module whose zip and documents are checked.
const libraryModule = "github.com/tierlock/tierlock"

// repoRoot returns the root of the checkout: two directories up, where
// go.mod names the library's module.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatalf("the checkout's root: %v", err)
	}
	if got := modfile.ModulePath(data); got != libraryModule {
		t.Fatalf("%s/go.mod is module %q, want %q", root, got, libraryModule)
	}
	return root
}

// errNoGit says that root cannot be listed through git: git is missing,
// or root is not a git work tree (a tarball of the sources).
var errNoGit = errors.New("not a git work tree")

// git runs git in dir and returns its output, trimmed.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", errors.New("git " + strings.Join(args, " ") + ": " + err.Error() + ": " + strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// treeFiles lists the files of the work tree at root as a commit of it
// would hold them, slash-separated and sorted: git's tracked files and
// the untracked ones it does not ignore (a file about to be added counts,
// build output under .gitignore does not), less those deleted from the
// work tree. It returns errNoGit when git cannot list them.
func treeFiles(root string) ([]string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errNoGit
	}
	if inside, err := git(root, "rev-parse", "--is-inside-work-tree"); err != nil || inside != "true" {
		return nil, errNoGit
	}
	out, err := git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool)
	var files []string
	for _, p := range strings.Split(out, "\x00") {
		if p == "" || seen[p] {
			continue // an unmerged file is listed once per stage
		}
		seen[p] = true
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p))); errors.Is(err, os.ErrNotExist) {
			continue // deleted, not yet committed
		}
		files = append(files, p)
	}
	sort.Strings(files)
	return files, nil
}

// diskFile is one file of the work tree, as golang.org/x/mod/zip takes
// it: its slash path in the module, its metadata and content read from
// disk.
type diskFile struct {
	root, path string
}

func (f diskFile) name() string                 { return filepath.Join(f.root, filepath.FromSlash(f.path)) }
func (f diskFile) Path() string                 { return f.path }
func (f diskFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.name()) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.name()) }

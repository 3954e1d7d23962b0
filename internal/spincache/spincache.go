// Package spincache keeps what spin's runs printed: a verification (spin
// -a, cc, pan), a random simulation, an error trail replayed. Each is a
// function of the model's text, the run's arguments and the versions of
// spin and cc alone, none of the library's code; so make test, which ran
// them afresh on every commit of the library (about 230 s of CPU, the
// background checks' longest part: docs/testing.md), reads a run's output
// back when an earlier one with the same inputs left it, and judges it as
// it judges a fresh one. A clean machine (CI) runs them all.
//
// The cache is $TIERLOCK_SPIN_CACHE, or tierlock/spin under the user's
// cache directory; TIERLOCK_SPIN_CACHE=off runs every one afresh.
package spincache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// Env names the environment variable that places the cache, or turns it
// off ("off").
const Env = "TIERLOCK_SPIN_CACHE"

// format is part of every key: a change in what an entry holds changes
// it.
const format = "spincache 1"

// keep is how long an entry no run has read stays.
const keep = 30 * 24 * time.Hour

var (
	toolsOnce sync.Once
	tools     string // spin -V and cc --version, in every key
	pruneOnce sync.Once
)

// Output returns what run printed for a run on the files named in dir with
// args: the cache's copy when a run with the same files' contents, args
// and tools left one (cached true), else run's output, kept when run
// succeeds. run's error is returned as it is, and nothing is kept.
func Output(dir string, files, args []string, run func() ([]byte, error)) (out []byte, cached bool, err error) {
	cache := Dir()
	if cache == "" {
		out, err = run()
		return out, false, err
	}
	k, err := key(dir, files, args)
	if err != nil {
		return nil, false, err
	}
	entry := filepath.Join(cache, k[:2], k)
	if out, err := os.ReadFile(entry); err == nil {
		now := time.Now()
		_ = os.Chtimes(entry, now, now) // read: kept another while
		return out, true, nil
	}
	if out, err = run(); err != nil {
		return out, false, err
	}
	pruneOnce.Do(func() { prune(cache) })
	if err := store(entry, out); err != nil {
		fmt.Fprintln(os.Stderr, "spincache: not kept:", err)
	}
	return out, false, nil
}

// Dir is the cache's directory, or "" when it is off or there is none.
func Dir() string {
	switch v := os.Getenv(Env); v {
	case "off":
		return ""
	case "":
		d, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(d, "tierlock", "spin")
	default:
		return v
	}
}

func key(dir string, files, args []string) (string, error) {
	toolsOnce.Do(func() {
		spin, _ := exec.Command("spin", "-V").CombinedOutput()
		cc, _ := exec.Command("cc", "--version").CombinedOutput()
		tools = string(spin) + "\x00" + string(cc)
	})
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00", format, tools, len(files))
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", fmt.Errorf("spincache: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00%s", f, len(b), b)
	}
	for _, a := range args {
		fmt.Fprintf(h, "%d\x00%s", len(a), a)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// store writes entry whole or not at all: runs of several test processes
// may keep the same entry at once.
func store(entry string, out []byte) error {
	if err := os.MkdirAll(filepath.Dir(entry), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(entry), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(out)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), entry)
}

// prune removes the entries no run has read for keep: a model's older
// texts, tools replaced.
func prune(cache string) {
	old := time.Now().Add(-keep)
	_ = filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil && info.ModTime().Before(old) {
			os.Remove(p)
		}
		return nil
	})
}

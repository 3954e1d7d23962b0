// Package peers runs the ZooKeeper lock clients of other languages that
// share lock paths with tierlock in a mixed fleet: Apache Curator's
// InterProcessMutex (Java, Debian's libcurator-recipes-java, compiled here
// with javac) and kazoo's Lock (Python, Debian's python3-kazoo, run by
// /usr/bin/python3). The interop tests and the stress command's -mix runs
// use it; nothing here is part of tierlock's API.
//
// The peer programs, CuratorPeer.java and kazoo_peer.py, are embedded and
// written to a cache directory the caller chooses (javac compiles into it
// once). Each runs in one of two modes: "loop" (threads acquire and release
// on their own for a while and append enter/exit lines to an O_APPEND file)
// and "serve" (a Go process drives each thread's acquire and release
// through stdin and stdout; see [Serve]). The Java peer also has "rwloop"
// (Curator's InterProcessReadWriteLock, reads and writes mixed) and
// "semloop" (InterProcessSemaphoreV2) loop modes; CuratorPeer.java lists
// their arguments. In serve mode it takes, instead of its mutex, a
// read/write lock per thread and path ([CuratorRW]: see [Proc.AcquireRead],
// [Proc.AcquireWrite]) or one semaphore per path ([CuratorLeases]: see
// [Proc.AcquirePermits]), and with [CuratorRevocable] its mutexes are
// revocable. Any Curator serve-mode thread can call Curator's
// Revoker.attemptRevoke ([Proc.Revoke]).
package peers

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Kind names a peer implementation.
type Kind string

// The peers.
const (
	// Curator is Apache Curator 5.4's InterProcessMutex, one per thread.
	Curator Kind = "curator"
	// Kazoo is kazoo 2.8's Lock, one per thread, counting Curator-style
	// "-lock-" nodes as contenders (extra_lock_patterns=("-lock-",)) unless
	// started with [KazooNoExtra].
	Kazoo Kind = "kazoo"
)

// Options of the kazoo peer.
const (
	// KazooNoExtra leaves out extra_lock_patterns, as kazoo's default does.
	KazooNoExtra = "--no-extra"
	// KazooRead takes kazoo's ReadLock instead of its Lock.
	KazooRead = "--read"
)

// CuratorRW is the Curator peer's serve-mode option that gives each
// thread an InterProcessReadWriteLock per path instead of a mutex.
const CuratorRW = "--rw"

// CuratorRevocable is the Curator peer's serve-mode option that makes each
// thread's mutexes revocable (InterProcessMutex.makeRevocable): on a
// revocation request the thread releases the path, and [Proc.Notices]
// reports both steps.
const CuratorRevocable = "--revocable"

// CuratorNamespace is the Curator peer's option, in any mode, that gives
// its client the namespace ns (no leading slash): every path it names
// lives under /ns, as under the chroot "host:port/ns" of tierlock and
// kazoo.
func CuratorNamespace(ns string) string { return "--namespace=" + ns }

// CuratorLeases is the Curator peer's serve-mode option that gives each
// path one InterProcessSemaphoreV2 of n leases, shared by the threads.
func CuratorLeases(n int) string { return "--leases=" + strconv.Itoa(n) }

// Where Debian puts the peers' runtimes.
const (
	Python     = "/usr/bin/python3"
	javaDir    = "/usr/share/java"
	curatorJar = javaDir + "/curator-recipes.jar" // its manifest names the other jars
	slf4jNop   = javaDir + "/slf4j-nop.jar"
)

// ErrMissing is returned when a peer's runtime is not installed.
var ErrMissing = errors.New("peers: not installed (run scripts/install-deps.sh, which installs libcurator-recipes-java, default-jdk-headless and python3-kazoo)")

var (
	//go:embed CuratorPeer.java
	curatorSource []byte
	//go:embed kazoo_peer.py
	kazooSource []byte
)

// Check reports whether kind can run here, with ErrMissing naming what is
// missing.
func Check(kind Kind) error {
	switch kind {
	case Curator:
		for _, tool := range []string{"java", "javac"} {
			if _, err := exec.LookPath(tool); err != nil {
				return fmt.Errorf("%w: %s not found", ErrMissing, tool)
			}
		}
		if _, err := os.Stat(curatorJar); err != nil {
			return fmt.Errorf("%w: %s", ErrMissing, curatorJar)
		}
		return nil
	case Kazoo:
		out, err := exec.Command(Python, "-c", "import kazoo; print(kazoo.__file__)").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s cannot import kazoo: %v: %s", ErrMissing, Python, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	return fmt.Errorf("peers: unknown peer %q", kind)
}

// buildMu serializes preparation of cache directories in this process;
// javac writes the class file under a temporary name first, so processes
// that share a directory see either nothing or a whole class file.
var buildMu sync.Mutex

// Command returns the command that runs kind with args (a mode and its
// arguments, see the package documentation), preparing cacheDir first:
// the Python program is written there, the Java program compiled there
// (once: later calls find the class file).
func Command(ctx context.Context, kind Kind, cacheDir string, args ...string) (*exec.Cmd, error) {
	if err := Check(kind); err != nil {
		return nil, err
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("peers: %w", err)
	}
	switch kind {
	case Curator:
		classes := filepath.Join(cacheDir, "curator")
		if _, err := os.Stat(filepath.Join(classes, "CuratorPeer.class")); err != nil {
			if err := compileCurator(ctx, cacheDir, classes); err != nil {
				return nil, err
			}
		}
		cp := classes + ":" + curatorJar
		if _, err := os.Stat(slf4jNop); err == nil {
			cp += ":" + slf4jNop
		}
		java := []string{"-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp, "CuratorPeer"}
		return exec.CommandContext(ctx, "java", append(java, args...)...), nil
	default: // Kazoo: Check knows no other
		script := filepath.Join(cacheDir, "kazoo_peer.py")
		if err := writeIfChanged(script, kazooSource); err != nil {
			return nil, err
		}
		return exec.CommandContext(ctx, Python, append([]string{"-u", script}, args...)...), nil
	}
}

func compileCurator(ctx context.Context, cacheDir, classes string) error {
	src := filepath.Join(cacheDir, "CuratorPeer.java")
	if err := writeIfChanged(src, curatorSource); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(cacheDir, "javac-")
	if err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	defer os.RemoveAll(tmp)
	out, err := exec.CommandContext(ctx, "javac", "-nowarn", "-d", tmp, "-cp", curatorJar, src).CombinedOutput()
	if err != nil {
		return fmt.Errorf("peers: javac CuratorPeer.java against %s: %v\n%s", curatorJar, err, out)
	}
	if err := os.Rename(tmp, classes); err != nil && !errors.Is(err, os.ErrExist) {
		if _, serr := os.Stat(filepath.Join(classes, "CuratorPeer.class")); serr != nil {
			return fmt.Errorf("peers: %w", err)
		}
	}
	return nil
}

func writeIfChanged(path string, b []byte) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(b) {
		return nil
	}
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	return nil
}

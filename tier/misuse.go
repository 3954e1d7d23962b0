package tier

import (
	"context"
	"log/slog"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
)

// A Release given a context that carries no hold of the lock at all is a
// mistake, not a race: typically the context passed to Acquire (the wait
// context) where the context Acquire returned (the held one) was meant.
// Nothing is released, since the wait context may be shared by many
// goroutines and the hold may be anyone's, so the hold stays until its own
// context releases it, or it is lost or closed; and under `defer
// x.Release(wait)` the ErrNotHolder returned is dropped. So every Release
// of this package (Lock, RWLock, Semaphore and the three registries) also
// logs such a call at Warn through the lock's logger, the session's, which
// names the lock's path (or the registry's root).
//
// The test is whether the context carries the lock's key at all (holdKey,
// rwKey, semKey, regKey): a context that carried a hold which has since
// ended (a second Release, a Release after the lock's Close, a hold lost and
// replaced) carries the key, and its Release returns ErrNotHolder or
// ErrClosed without logging: that is an ordering the caller chose, and it
// leaks nothing.

// warnNotHolder logs at Warn, through log (a lock's or a registry's
// logger, which names its path or root), a Release given a context that
// carries no hold of this what (a lock, a registry, ...); acquire names
// the methods whose result should have been passed. It returns
// ErrNotHolder.
func warnNotHolder(log *slog.Logger, what, acquire string) error {
	ctx := context.Background()
	if log == nil || !log.Enabled(ctx, slog.LevelWarn) {
		return ErrNotHolder
	}
	var args []any
	if caller := callerOutside(); caller != "" {
		args = append(args, "caller", caller)
	}
	log.WarnContext(ctx, "Release given a context that carries no hold of this "+what+
		" (the one passed to "+acquire+"?): nothing was released; pass the context "+acquire+" returned", args...)
	return ErrNotHolder
}

// tierPrefix begins the name of every function of this package.
var tierPrefix = reflect.TypeFor[Lock]().PkgPath() + "."

// callerOutside returns where the first caller outside this package is,
// as "function file:line", or "" if there is none: the Release call to
// fix.
func callerOutside() string {
	var pcs [16]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	for {
		f, more := frames.Next()
		if f.Function != "" && !strings.HasPrefix(f.Function, tierPrefix) {
			return f.Function + " " + filepath.Base(f.File) + ":" + strconv.Itoa(f.Line)
		}
		if !more {
			return ""
		}
	}
}

package runner

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/stress/internal/fleet"
)

// inFlight is how many requests the parent's set-up and clean-up of a
// run's paths keep in flight on its one connection, which pipelines them:
// a run of 1,000 lock paths makes, walks and deletes them in some tens of
// round trips, not in the thousands that one request at a time took (on
// a three-server ensemble, seconds of every run).
const inFlight = 32

// eachInFlight calls fn for every item, up to inFlight at a time, and
// returns the first error.
func eachInFlight[T any](items []T, fn func(T) error) error {
	sem := make(chan struct{}, inFlight)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for _, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(it); err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// makePaths creates the lock paths (and their parents) as persistent
// nodes: the parents, shared by the paths, once each and in order, then
// the paths side by side.
func (r *Runner) makePaths(paths []string) error {
	create := func(p string) error {
		_, err := r.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("%w: create %s: %w", fleet.ErrRun, p, err)
		}
		return nil
	}
	made := map[string]bool{}
	for _, p := range paths {
		for _, dir := range parents(p) {
			if made[dir] {
				continue
			}
			if err := create(dir); err != nil {
				return err
			}
			made[dir] = true
		}
	}
	return eachInFlight(paths, create)
}

// parents are p's ancestors below the root, the outermost first.
func parents(p string) []string {
	var out []string
	for dir := path.Dir(p); dir != "/" && dir != "."; dir = path.Dir(dir) {
		out = append(out, dir)
	}
	slices.Reverse(out)
	return out
}

// deleteTree deletes p and everything below it, best effort, its
// children's subtrees side by side.
func deleteTree(conn *zk.Conn, p string) {
	children, _, err := conn.Children(p)
	if err != nil {
		return
	}
	eachInFlight(children, func(c string) error {
		deleteSubtree(conn, p+"/"+c)
		return nil
	})
	deleteSubtree(conn, p)
}

// deleteSubtree deletes p and everything below it, one request at a
// time, trying again while a node is still going.
func deleteSubtree(conn *zk.Conn, p string) {
	for attempt := 0; attempt < 5; attempt++ {
		children, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		for _, c := range children {
			deleteSubtree(conn, p+"/"+c)
		}
		err = conn.Delete(p, -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return
		}
		time.Sleep(50 * time.Millisecond) // ErrNotEmpty: a node was still going
	}
}

// ephemerals lists the ephemeral nodes below base ("path (session id)"),
// sorted, its children's subtrees walked side by side.
func (r *Runner) ephemerals(base string) []string {
	kids, _, err := r.conn.Children(base)
	if err != nil {
		return nil
	}
	var (
		mu   sync.Mutex
		left []string
	)
	eachInFlight(kids, func(k string) error {
		found := r.ephemeralsFrom(path.Join(base, k))
		mu.Lock()
		left = append(left, found...)
		mu.Unlock()
		return nil
	})
	slices.Sort(left)
	return left
}

// ephemeralsFrom lists p if it is ephemeral, then those below it, one
// request at a time.
func (r *Runner) ephemeralsFrom(p string) []string {
	var out []string
	if _, st, err := r.conn.Get(p); err == nil && st.EphemeralOwner != 0 {
		out = append(out, fmt.Sprintf("%s (session %x)", p, st.EphemeralOwner))
	}
	kids, _, err := r.conn.Children(p)
	if err != nil {
		return out
	}
	for _, k := range kids {
		out = append(out, r.ephemeralsFrom(p+"/"+k)...)
	}
	return out
}

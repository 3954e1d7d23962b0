// Package mutexbool provides BooleanMutex, a boolean signal that goroutines
// can wait on until it becomes true.
//
// In tierlock it is the bridge between ZooKeeper's asynchronous world and
// the blocking, cancellable lock acquire: a watch callback calls Set(true)
// when the lock may have become ours, and the acquiring goroutine blocks in
// Get(ctx) (or selects on Done, beside its re-check timer) until that
// happens or its context ends. Package zklock uses it
// for the ZooKeeper lock tier, and package tier builds on zklock.
//
// The package depends on the standard library only. It is modelled on the
// BooleanMutex of agapple's distributed lock, reimplemented with channels:
// waiting never polls and never starts helper goroutines.
package mutexbool

// Command stress runs P worker processes x G goroutines against L lock
// paths on a real ZooKeeper, proves that mutual exclusion held, and compares
// lock implementations side by side: throughput, acquire latency, ZooKeeper
// requests per acquisition, znodes and watches per lock path, and fairness.
//
//	go run ./stress -impl all -handoff -procs 4 -goroutines 64 -duration 10s \
//	    -report /tmp/r.html -json /tmp/r.json
//
// # Implementations
//
//   - tier: one tier.Lock per path per process, shared by all goroutines
//     (strict release order: node first, then the local gate).
//   - tier-handoff: the same with tier.WithHandoff (-handoff, -handoff-max,
//     -handoff-max-hold); -impl all -handoff runs tier both ways.
//   - zklock: one zklock.Lock per path per process behind a sync.Mutex.
//   - gozk: the baseline tierlock replaces, go-zookeeper's zk.Lock, one per
//     goroutine and path, on one connection per process.
//   - nolock: no lock at all, never part of "all": it shows that the
//     checker fails a run that does not exclude.
//
// # How a run goes
//
// The parent finds ZooKeeper (-zk, else $TIERLOCK_ZK_SERVERS, else it
// starts a local server with internal/zkserver and stops it at the end),
// creates the lock paths, and for each implementation re-executes its own
// binary P times with TIERLOCK_STRESS_WORKER set to the worker's task (as
// JSON). Workers connect, make their locks and say "ready" on stdout; the
// parent reads the server counters and starts them together on stdin;
// they send progress and "done"; the parent reads the counters again, tells
// them to exit and collects their results. Meanwhile it samples the
// children of each lock path and the watches on them (the wchp four-letter
// word) every -sample.
//
// Every critical section is recorded by its worker: enter and exit times
// on CLOCK_MONOTONIC (one clock for all processes of the machine, unlike
// the monotonic reading of a Go time.Time), fencing token, goroutine, lock
// path. Records go to a memory-mapped file per worker, so they survive a
// worker killed in the middle of a hold. The independent checker (package
// stress/internal/check) then reads all of them and reports, per lock path,
// overlapping holds, fencing tokens that go backwards, and holds entered but
// never left.
//
// Tokens are the lock node's czxid for tier and zklock, and its sequence
// number for gozk (zk.Lock keeps it in an unexported field, read through
// reflect); a tier-handoff hold passed between goroutines of one process
// keeps its node and so its token.
//
// # Output
//
// An aligned table on stdout, the figures as JSON (-json), and an HTML
// report (-report) with the comparison, latency distributions and a
// timeline of who held the first lock path, one lane per process. A
// progress bar is drawn on stderr when it is a terminal.
//
// Exit status: 0 when every check passed; 1 when the checker found a
// violation or a lock call failed; 2 for bad usage (flags, output files that
// cannot be written); 3 when the run could not be carried out (ZooKeeper
// unreachable, a worker died, interrupted).
//
// The files: config.go (flags), main.go (entry, exit status), parent.go
// (orchestration), proc.go (worker processes), worker.go (the worker),
// impls.go and impl_tier.go (the implementations), sampler.go (znodes and
// watches), results.go (figures, JSON), table.go, reportdata.go and
// internal/report (the HTML page), internal/check (the checker),
// internal/record (records and the shared clock), internal/figures
// (percentiles, Jain's index), progress.go (the progress bar).
package main

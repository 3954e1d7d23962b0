// Command stress runs P worker processes x G goroutines against L lock
// paths on a real ZooKeeper, proves that mutual exclusion held, and compares
// lock implementations side by side: throughput, acquire latency, ZooKeeper
// requests per acquisition, znodes and watches per lock path, and fairness.
// It is a module of its own (stress/go.mod), so that its dependencies (the
// plots, Prometheus, the progress bar) are not the library's: from the
// checkout's root, go run -C stress . runs it, in this directory, which is
// where relative paths such as out/soak.json below then land.
//
//	go run -C stress . -impl all -handoff -procs 4 -goroutines 64 -duration 10s \
//	    -report /tmp/r.html -json /tmp/r.json
//
// and, with faults injected all along (the soak run):
//
//	go run -C stress . -procs 4 -goroutines 64 -fault all -duration 5m \
//	    -report out/soak.html -json out/soak.json
//
// and the whole comparison as a matrix of cells (processes x goroutines x
// paths x critical section, on a standalone server and a three-server
// ensemble), one JSON file and one report with heat maps, saved after every
// cell and resumable (-matrix-resume); -matrix full measures each run for
// 20s after a 5s warm-up and says at the start how long it will take
// (about four hours), -matrix quick is a first look in minutes:
//
//	go run -C stress . -matrix full -json m.json -report m.html
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
//   - redsync: redsync v4's Mutex per goroutine and key on a redis-server
//     stress starts; not in "all", -mix, the recipes or -fault (no token).
//   - nolock: no lock at all, never in "all": shows that the checker fails.
//
// # Recipes: read/write lock and semaphore
//
// -recipe rw runs a read/write lock instead of a mutex: each goroutine
// takes, hold after hold, a read with probability -readers (default 0.9)
// or else a write; -recipe semaphore runs a semaphore of -leases leases
// (default 3) per path, each hold taking -permits permits (default 1).
// -recipe mutex, the default, is everything above. The implementations of
// the recipes:
//
//   - tier: one tier.RWLock / tier.Semaphore per path per process, shared
//     by all goroutines (strict: neither has a hand-off).
//   - curator: Apache Curator's InterProcessReadWriteLock, one per thread
//     and path, / InterProcessSemaphoreV2, one per path shared by the
//     threads, driven through the Java peer of internal/peers in serve
//     mode (--rw, --leases=n); -impl all runs tier and curator.
//   - nolock: no lock at all, never part of "all": the run must fail.
//
// Records carry the kind of each hold (read or write; permits), and the
// checker (exclusion.Hold.Shared, exclusion.Options.Permits) lets reads
// overlap reads but a write overlap nothing, or up to n permits be in use
// at any instant; writers' fencing tokens must increase, lease tokens are
// not checked. Besides the usual figures, a run reports reader
// concurrency (most and mean readers in at once), the writer wait (write
// acquire latency) and lease utilization (mean permits in use / n). Faults
// apply as to the mutex (tier only: the peer does not notice a lost
// hold); the flood fault floods tier.Locks on the worker's session.
//
// # Recipe: multi-lock
//
// -recipe multi -members k runs tier.MultiLock holds: each covers the
// picked path and the next k-1 (wrapping around), given to NewMultiLock in
// reverse so that its path order is what keeps overlapping sets from
// deadlocking, over one tier.Lock per path per process. A hold is recorded
// on every path it covers with that member's token, so the checker checks
// exclusion and tokens per path; acquisitions count member holds.
//
// # How a run goes
//
// The parent finds ZooKeeper (-zk, else $TIERLOCK_ZK_SERVERS, else it
// starts a local server with internal/zkserver and stops it at the end),
// creates the lock paths, and for each implementation re-executes its own
// binary P times as workers (internal/child, with the worker's task as
// JSON in the environment). Workers connect, make their locks and say
// "ready" on stdout; the parent starts them together on stdin, telling
// them the run's start t0 on the shared clock; they run for -warmup +
// -duration, send progress and "done"; the parent tells them to exit and
// collects their results. Meanwhile it samples the children of each lock
// path and the watches on them (the wchp four-letter word) every -sample,
// and reads the servers' counters at the edges of the measured window
// (below). After each implementation's run it probes the servers' limits
// (-probe, below).
//
// # How a run is counted: one window for every implementation
//
// A timed run is measured over one window, the same for every implementation:
// [t0 + -warmup, t0 + -warmup + -duration] on CLOCK_MONOTONIC (default warm-up
// 5s). Only holds whose enter time lies inside it count as acquisitions, and
// acq/s divides them by the window's length. The servers' counters (mntr
// zk_packets_received) and processor time (/proc/<pid>/stat of the servers
// stress started) are read on timers at its two edges, with how the machine's
// processors were spent (/proc/stat: busy, and stolen by a hypervisor, the
// "machine busy/steal" column: a run that met more steal is a slow machine,
// not a slow lock), and each worker reads its own at the same moments: the
// requests it wrote by opcode (every implementation on a go-zookeeper
// connection dials through one counting net.Conn, internal/wire, whose count
// is an atomic add per write), its user + system time (getrusage), its
// goroutines (peak, sampled every 100ms), its session's lease (waits, lapses)
// and the session timeout the server granted (read from the connect response).
// Timers fire late on a loaded machine, so each count is divided by the grants
// of the interval it was really read over (the servers' by the holds entered
// between the parent's two readings, a worker's by its own holds between its
// readings). The workers stop 100ms after the window (proto.DeadlineGrace), so
// that these readings do not race what comes after: go-zookeeper's zk.Lock
// cannot abandon a wait, and its queued waiters are granted after the deadline
// (a drain); tier abandons its waits, deleting its queued nodes. Neither is
// charged to anyone: the holds entered before the window (warm-up), after it,
// and the waits abandoned at the deadline are reported apart. The independent
// checker still checks every hold, inside the window or not. A run with -fault
// or -acquisitions has no warm-up and is measured whole, from its start to its
// end.
//
// Every implementation is counted over the same window after a warm-up,
// with the servers' and the workers' counters read at its edges: zk.Lock's
// waiters granted after the deadline count for no one, nor do tier's
// abandoned nodes, nor the start-up burst (a create and a listing per
// goroutine). stress/internal/runner's TestDrainAndAbandonCountedAlike
// runs a lock that drains and one that abandons, and checks that each is
// counted over its window, the work after the deadline reported apart. The
// servers stress starts grant the session timeout asked for
// (internal/zkserver: 2 ticks to 60s, where ZooKeeper's default cap is 20
// ticks, 4s at a 200ms tick, which would cut the 10s asked for and with it
// the lease's bound), and every output states the timeout granted.
//
// # Limits: the hand-off chain and create+delete pairs
//
// Right after each implementation's run, once its sessions have ended, the
// parent probes the same servers (-probe long each; 0: no probe) from the
// servers of worker slot 0: awaited ephemeral create + delete pairs per
// second on one connection (what an uncontended acquire and release cost),
// and the hand-off chain every FIFO lock on one contended path sits on:
// two sessions take turns, the holder deletes its node, the other, which
// watches it (GetW), gets the event and lists the children once; only
// those links are timed (the next node and watch are set up between them,
// as waiters queued long before would have). Each implementation's
// throughput is reported as a fraction of both; strict tier on one path
// is bounded by the chain.
//
// Every critical section is recorded by its worker: enter and exit times on
// CLOCK_MONOTONIC (one clock for all processes of the machine, unlike the
// monotonic reading of a Go time.Time), fencing token, goroutine, lock path.
// Records go to a memory-mapped file per worker, so they survive a worker
// killed in the middle of a hold. The independent checker (package
// internal/exclusion, which the tier tests use too) then reads all of them and
// reports, per lock path, overlapping holds, fencing tokens that go backwards,
// and holds entered but never left; in runs with faults, also holds whose loss
// was seen after the next grant, and stale writes that landed (below).
//
// Tokens are zxids for tier and zklock (see zklock.Lock.Token) and, for gozk,
// the lock node's sequence number (zk.Lock keeps it in an unexported field,
// read through reflect); a tier-handoff hold passed between goroutines of one
// process keeps its node and so its token.
//
// # Faults
//
// -fault injects faults while the workers run, one at a time, each after a
// random pause (half to one and a half -fault-every, counted from the
// previous fault's recovery), its kind drawn in shuffled rounds of the kinds
// asked for (each round a random order of all of them, so every kind comes
// as often as the others; -fault all: every kind the servers allow;
// -fault-seed repeats a schedule, and every implementation of a run gets
// the same one):
//
//   - restart: SIGKILL the server stress started and restart it with its
//     data (with an ensemble: a random follower).
//   - leader: SIGKILL the leader of a three-server ensemble, which stress
//     then starts instead of one server (with -fault leader or all); it is
//     restarted a moment after another member leads. restart and leader
//     need servers that stress started: with -zk (or the environment
//     variable) they are usage errors, and "all" leaves them out.
//   - expire: freeze one worker's connections (faultproxy.Pause) for longer
//     than the session timeout, so that the server expires its session
//     while the process lives on. Each worker reaches ZooKeeper through its
//     own fault proxies (internal/faultproxy, one per server, in the
//     parent), which is how a fault hits one worker only.
//   - drop: close one worker's connections (DropAll), or cut them right
//     after a few bytes towards the server, between a request and its
//     reply (DropAfter).
//   - kill: SIGKILL one worker and start a replacement in its place, so
//     that P stays constant.
//   - partition: cut a follower of the three-server ensemble from its
//     peers while its clients stay connected (stress then starts the
//     ensemble with zkserver.WithPeerProxies), preferably the follower a
//     holder is connected to; healed after the session timeout + 1-2s.
//     Needs servers stress started, like restart and leader.
//   - reset: TCP resets (faultproxy.Reset, ResetAfter) of one worker's
//     connections: under a holder, at a random moment, a few bytes into a
//     request, or right as a holder releases (between a release and its
//     delete).
//   - flood: a worker queues 200 waiters behind its own holds, then its
//     connections freeze past the session timeout while its state listener
//     is slow on the expiry; every waiter must end within the session
//     timeout + 10s, no grant may come already lost, a fresh lock must
//     hold.
//   - stall: one worker's writes are blocked (faultproxy.Stall) while the
//     server's bytes flow, for longer than the session timeout.
//   - pause: SIGSTOP one worker while it holds a lock, for the session
//     timeout + 1-2s and until a later holder of its path has written to
//     the fenced store (at most 10s more), then SIGCONT it: a process
//     paused past its session (a long garbage collection, a debugger, a
//     frozen virtual machine). The server expires its session and grants
//     the lock to another worker meanwhile; the paused one cannot know. On
//     waking it writes at once, before looking at its lock (a holder
//     paused between its check and its write), through its lock's guarded
//     transaction and to the fenced store; both writes must be refused
//     (the guarded one by the server, its node being gone, or by the lock,
//     which may learn of the loss first; the fenced one by the fence, a
//     later token having been admitted), and the holder must see its hold
//     lost within the session timeout of waking. The fault log says how
//     each write ended and when the loss was seen.
//   - close: one worker closes its locks and makes new ones on the same
//     paths, 20 times about 20 ms apart, while its goroutines acquire
//     them: grants racing Close. A grant published after its lock's Close
//     looked for holds must be withdrawn (ErrClosed; the goroutine
//     acquires again on the new lock), never left live with its node
//     gone, which the checker would see as an overlap. tier and
//     tier-handoff do it (including their read/write lock and semaphore
//     recipes when -recipe says so); other implementations say they
//     cannot, and the fault is only a pause.
//
// Workers in fault runs record when they saw each hold lost (the held
// context cancelled, CLOCK_MONOTONIC); the checker reports a late-loss
// violation when another process entered the path before that moment
// (loss before grant). A hold whose holder saw its loss before leaving is
// checked for overlaps up to the loss (cut there, counted apart): from then
// on its holder knows, and what it still writes is the fencing token's to
// refuse. After the run every ephemeral node left under the run's paths
// once the workers' sessions ended is an orphan, a failure.
// A paused process cannot run its timers, so no lock can tell it its loss
// before the next grant: its holds in progress at the stop are cut there
// (exclusion.Options.Paused, counted apart; a hold it was granted before
// the stop and entered only on waking is recognised by its token, lower
// than one granted meanwhile), checked for overlaps up to the stop and
// not for a late loss. What proves it harmless is the fencing, next.
//
// # Guarded writes: what proves a paused holder harmless
//
// In a run with faults (and -writes, the default) every exclusive hold (a
// mutex's, a writer's) writes, right after it is entered and before its
// critical section, to two resources that its token guards
// (stress/internal/writes):
//
//   - the guarded node of its path, <run>/guarded/lock-<i>, through the
//     lock's guarded transaction (tier.Lock.Txn, zklock.Hold.Txn: a multi
//     whose first op checks that the hold's node exists): the multi sets
//     the node's data to the token and creates a persistent sequential
//     child named after the token and the process, so the children's
//     sequence numbers are the order in which the server applied the
//     writes. The parent lists and deletes the children every 500ms and
//     keeps their history; after the run the nodes' versions must equal
//     the writes collected and their data the last one.
//   - a fenced store in the parent, on a Unix socket: a fence.Keyed per
//     path, which admits a token no lower than the highest it admitted,
//     and logs the admitted writes in order, inside the fence.
//
// The checker (exclusion.CheckWrites) reads both histories and reports
// "stale writes landed": a write whose token is lower than that of a
// write that landed before it on its path (or equal to another process's),
// a failure of the run. A read/write lock has no guarded transaction: its
// writers write to the fenced store only (readers do not write). A
// semaphore's holds do not write: its leases are held side by side, so
// their tokens are not ordered among them and no fence could tell a stale
// one; nor do multi-lock holds. The pause is what makes the check bite:
// the paused holder's writes on waking are the stale writes, and the
// fault log and the summary (the store's refusals "made by paused workers
// on waking") show them refused. With $TIERLOCK_STRESS_UNFENCED=1 the
// store's fence is off (it admits every write): a run with the pause
// fault must then fail, naming the stale write, which is how the check is
// seen to bite (TestFaultPauseUnfenced).
//
// Faults on a worker (expire, drop, kill, pause) are put, where possible, on a
// process that holds a lock: the parent asks the worker to keep its next
// hold until it is lost ("linger"), and strikes once it holds. The holder
// must see the hold lost (the held context is cancelled: tier and zklock
// end a hold on a disconnection, or when the session has not been
// confirmed with the leader for a quarter of the session timeout, before
// the server can expire the session); it
// leaves its critical section then, and the checker verifies that nobody
// entered before. A killed holder cannot leave: its hold is cut at the
// moment the parent knew it dead, counted apart (not a violation), and any
// hold of another process entered before that moment is an overlap.
//
// Every fault must be recovered from: the workers it hit (every worker for
// a server fault, the replacement for a kill) must acquire again within
// the session timeout + 15s of its healing, or the run fails. A run whose
// end comes during a fault is extended until the fault is recovered from.
// With -fault the session timeout defaults to 2s (the local server's
// tickTime of 200ms allows 0.4s to 4s) and the implementation to tier:
// gozk cannot run with faults, since zk.Lock neither notices a lost hold
// nor recovers from a failed Unlock. A server restart resets the servers'
// request counters, so requests per acquisition are then not reported.
//
// The fault log (time, fault, target, time to healing, to the next
// acquisition by any worker, and to the next acquisition of the worker(s)
// hit) is printed after the table, written to the JSON (faults) and shown
// in the HTML report, whose timelines mark the faults as shaded bands.
//
// # Metrics
//
// -metrics host:port makes each worker of a tier, tier-handoff or zklock
// run serve Prometheus metrics (package lockmetrics) while it runs: the
// worker in slot i at http://host:(port+i)/metrics, the addresses printed
// on stderr at the start of each implementation's run. tier workers
// export everything (waits, holds, waiters, acquisitions by tier, losses
// by cause), zklock workers their session's state only; the recipes and
// the peers export nothing. Each worker is a target of its own, as a
// process of a fleet would be: Prometheus sums them (sum without
// (instance)). A worker killed by the kill fault takes its counts with it,
// and its replacement serves on the same port from zero, which is how
// Prometheus sees a crashed and restarted process (a counter reset).
//
//	go run -C stress . -impl tier -procs 4 -duration 1m -metrics 127.0.0.1:9100
//
// # Cold locks (-cold), idle sessions' cost (-idle-cost)
//
// stress -cold times an uncontended Lock first on a connection and after
// idle spells, zk.Lock, zkcompat and tier side by side (stress -cold -h);
// stress -idle-cost what their idle sessions cost one server (-idle-cost -h).
//
// # README's figures again (-demo)
//
// stress -demo (make demo) runs README's speed shapes (4 x 1,000 x 1,000
// keys on one server and on three, 4 x 64 on one path), each a matrix of
// one cell run -demo-repeat times in rotated order, and sets each figure's
// median, min-max and runs beside README's (stress -demo -h).
//
// # Output
//
// An aligned table on stdout (every console table at most 120 columns wide: a
// wider one is split into panels that repeat the rows' names), under it what
// each implementation is and warnings when the machine was saturated (busy
// above 90 % or steal above 10 %) or the ratios rest on one run; then what an
// acquisition cost inside the window (client and server CPU per acquisition,
// peak goroutines per process, requests per acquisition as the servers
// received them and as the workers wrote them, by kind, lease waits and
// lapses, the granted session timeout; holds in the warm-up and after the
// window, waits abandoned) and the throughput against the probed limits; the
// figures as JSON (-json: cost and limits under "cost"), and an HTML report
// (-report) with the same tables, each scrolling in its own box, the
// throughput on a log axis (so that hand-off does not flatten strict mode's
// bar), latency distributions and a timeline of who held the first lock path,
// one lane per process. The banner says what was found: green when every check
// passed, red when mutual exclusion was violated, amber for lock errors or an
// incomplete run without a violation. A progress bar is drawn on stderr when
// it is a terminal.
//
// Every run's holds, and the fenced store's writes, also go through
// Porcupine against a model of a lock with fencing tokens (internal/linear,
// docs/histories.md): per lock path, in windows of 5,000 operations; its
// verdict ("porcupine: linearizable (P paths, O operations, T ms)") ends
// each implementation's line and the verdict, and a history it finds not
// linearizable, or cannot decide in time, fails the run.
//
// Exit status: 0 when every check passed; 1 when the checker or Porcupine
// found a violation, a lock call failed or a fault was not recovered from; 2
// for bad usage (flags, output files that cannot be written); 3 when the run
// could not be carried out (ZooKeeper unreachable, a worker died,
// interrupted).
//
// # Packages
//
// package main parses the flags and wires the rest together. The worker
// side never imports the parent side; both speak proto:
//
//	internal/proto     the parent<->worker protocol: the task, commands,
//	                   messages, results, implementation names
//	internal/worker    a worker process: one file per implementation, the
//	                   goroutines' loop, the flood fault's waiters
//	internal/record    the workers' memory-mapped hold records
//	internal/fleet     the parent's handle on the workers: start, await,
//	                   broadcast, kill, replace
//	internal/fault     fault injection: schedule, server faults, client
//	                   faults (the pause among them), recovery
//	internal/writes    the guarded resources of a fault run: guarded
//	                   nodes and their collector, the fenced store
//	internal/runner    one run: ZooKeeper, paths, workers, the measured
//	                   window, collection, checking, the limits' probe
//	internal/wire      the workers' counting dialer: requests by opcode,
//	                   the granted session timeout
//	internal/sample    znodes and watches per path while a run goes on
//	internal/progress  the progress bar
//	internal/results   figures, verdict, table, fault log, JSON, report data
//	internal/figures   percentiles and Jain's index
//	internal/report    the HTML pages (a run's; a matrix's heat maps)
//	internal/cells     a matrix's plan: axes, presets, cells (-matrix)
//	internal/matrix    a matrix run: cell after cell, saved after each,
//	                   resumable
//
// and, shared with the rest of the module, the checker
// (tierlock/internal/exclusion) and the child-process harness
// (tierlock/internal/child).
package main

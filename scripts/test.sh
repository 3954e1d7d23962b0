#!/usr/bin/env bash
# The whole test suite: installs ZooKeeper if missing, checks formatting and
# vet, then runs every package's tests with the race detector, in every
# module of the repository. Each test package starts its own real
# ZooKeeper (or uses TIERLOCK_ZK_SERVERS). The checks that only compute
# run in the background at the lowest priority from the start; the tests
# judged by a clock run in phases, then in steps side by side.
#
# Not under set -e: a failing phase does not end the suite (issue 57, item
# 5: the race run's failure once ended it, and the explorers, cronlock,
# gocronlock, the replay and the nemesis never ran, and nothing said so).
# Every phase runs whatever an earlier one did, prints its time, and the
# suite ends with the list of the phases that failed, each with the
# failures its log names, and a non-zero status.
set -uo pipefail
cd "$(dirname "$0")/.."

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
failed=()
suite_began=$SECONDS

# failures prints what a failed phase's log names: the go test lines of
# failed tests and packages, the parts of a background step that failed,
# and panics (a timeout, a crash), with the tests a timeout found running
# (go test lists them under the panic): a CI run's runonce timed out once,
# and the part of its output on record named no test.
failures() {
  awk '/^ *--- FAIL: |^FAIL[[:space:]]|^LEAK[[:space:]]|^--- .*: FAILED/ { print; next }
       /^panic: / { print; running = /timed out/; next }
       running && /^[[:space:]]+(running tests:|Test|Example|Fuzz)/ { print; next }
       { running = 0 }' "$logs/$1.log" | sed 's/^/    /'
}

# timed runs a command between "=== name" and "--- name: ok|FAILED, its
# time", and returns its status.
timed() {
  local name=$1 began=$SECONDS rc
  shift
  echo "=== $name"
  "$@"
  rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "--- $name: ok, $((SECONDS - began)) s"
  else
    echo "--- $name: FAILED (exit $rc), $((SECONDS - began)) s"
  fi
  return $rc
}

# phase runs a command in the foreground, its output on the console and
# in its log.
phase() {
  timed "$@" 2>&1 | tee "$logs/$1.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("$1")
}

# unnice sets process $1 and every process under it back to nice 0: each
# of its threads, since Linux keeps a nice per thread (renice -p of a Go
# test binary's pid sets its main thread's alone).
unnice() {
  local p t kids
  renice -n 0 -p "$1" >/dev/null 2>&1 || { echo "renice failed: the checks go on at nice 19"; return 0; }
  for t in /proc/"$1"/task/*; do renice -n 0 -p "${t##*/}" >/dev/null 2>&1; done
  kids=$(ps -o pid= --ppid "$1" 2>/dev/null)
  for p in $kids; do unnice "$p"; done
}

# A step runs in the background, to a log of its own, printed with its
# time when finish_steps has waited for it.
declare -A step_pids
step() {
  timed "$@" >"$logs/$1.log" 2>&1 &
  step_pids[$1]=$!
}
# finish_steps waits for the steps named, in that order, and prints each
# one's log.
finish_steps() {
  local name
  for name in "$@"; do
    wait "${step_pids[$name]}" || failed+=("$name")
    cat "$logs/$name.log"
  done
}

# module_checks vets and tests the module in directory $1 with the race
# detector, under timeout $2; the tests run even when vet fails.
module_checks() {
  local dir=$1 timeout=$2 rc=0
  shift 2
  (cd "$dir" && go vet ./...) || rc=1
  (cd "$dir" && go test -race -count=1 -timeout "$timeout" "$@" ./...) || rc=1
  return $rc
}

if [ -z "${TIERLOCK_ZK_SERVERS:-}" ]; then
  phase deps scripts/install-deps.sh
fi

# gofmt over the files of every module of the repository.
gofmt_check() {
  local unformatted
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
  if [ -n "$unformatted" ]; then
    echo "gofmt would change: $unformatted"
    return 1
  fi
}

# The packages that only compute: no ZooKeeper, no clock they are judged
# by (model's spin searches, the write path's unit tests and explorer,
# the run records, the spin simulations replayed). They run in the
# background checks below, not in the race run. The run records' tests
# (internal/runrec) start no goroutine, so the race detector has nothing
# to watch in them: they run without it (2.6 s; 36 s under it). Nor has
# it much in internal/replay's untagged tests (spin's simulations and
# counterexamples replayed, one checker per trace): 24 s and 47 s of CPU without it, 71 s
# in the race run's third lane under it; the replay step below runs the
# checker under the race detector on recorded traces.
compute_pkgs=(./model ./zklock/internal/writes ./internal/runrec ./internal/replay)
compute_race_pkgs=(./model ./zklock/internal/writes)

# The write path explored schedule by schedule (zklock/internal/writes):
# 100,000 schedules without the race detector (about 10 s; the compute
# run explores 10,000), and its seeded bugs, each found by the explorer.
# The lease explored schedule by schedule too (zklock/internal/session,
# docs/lease.md): 20,000 schedules on a virtual clock (the seeds 1 to
# 20,000, 4 times the 4,757 within which the floor's seeded bugs are each
# refused; 31 s on the two cores of the machine of runs 102-108, 57 s of
# CPU, every moment the checks count reached). The package's default, 80,000,
# kept two loaded make tests at 17 and 19.9 min when the explorers ran at
# normal priority; 40,000 cost 110-130 s of a core in make test on the
# machine of runs 102-108, where the background checks end a loaded run
# (runs 105 and 107: 826 and 927 s, the foreground done at 702 and 739);
# the race run explores 2,000 on one core; 80,000 and longer soaks are
# docs/lease.md's commands), and those seeded bugs (30 s idle).
explore() {
  local rc=0
  go test -count=1 -timeout 30m -run 'TestExplore$' ./zklock/internal/writes/ || rc=1
  go test -count=1 -timeout 30m -tags tierlockmutants -run TestExploreFindsSeededBugs ./zklock/internal/writes/ || rc=1
  go test -count=1 -timeout 30m -run 'TestLeaseExplore$' ./zklock/internal/session/ -lease.schedules=20000 || rc=1
  go test -count=1 -timeout 30m -tags tierlockmutants -run TestLeaseExploreFindsSeededBugs ./zklock/internal/session/ || rc=1
  return $rc
}

# The checks that compute and are judged by no clock run in the
# background from the start, one after the other, at the lowest priority
# (nice 19): gofmt, vet, the repository's own checks (internal/repocheck,
# a module of its own so that the library does not require
# golang.org/x/mod: the zip go get downloads stays within 2 MB and holds
# no raw benchmark output, every relative link in the Markdown files
# resolves), the compute packages under -race, and the explorers. They
# take the processor the tests that wait on ZooKeeper's timeouts, faults
# and schedulers leave: the race run kept an idle 2-core machine 25-40 %
# busy for its first 270 s (idle run of 22472c4), while these ran in
# phases of their own or beside the stress module (about 160 s of an idle
# make test's 937). At nice 19 a test that waits on a clock takes the
# processor from them when it wakes, so they make no fleet late; in a
# phase of their own, or at normal priority beside the steps, they did
# (gocronlock's TestFleetScale ran 22 % of its ticks late beside the
# explorers). Time limits of 30 min: beside a busy core they get what is
# left.
# The spin runs in ./model and ./internal/replay (about 230 s of CPU)
# read back the output of an earlier run with the same model, arguments
# and tools (internal/spincache, docs/testing.md); TIERLOCK_SPIN_CACHE=off
# runs them all afresh.
compute_tests() {
  local rc=0
  go test -race -count=1 -p 1 -timeout 30m "$@" "${compute_race_pkgs[@]}" || rc=1
  go test -count=1 -timeout 30m "$@" ./internal/runrec ./internal/replay || rc=1
  return $rc
}
# Tests run alone, each in a test binary of its own (scripts/alone.sh): a
# test must leave no goroutine and no process behind, whatever runs after
# it; in a package's run a later test may give a leftover time to end
# before TestMain's goleak looks. Every test alone is a long sweep
# (docs/testing.md); here, the tests of the test files changed since the
# upstream's merge base (on the upstream's tip, since HEAD~1;
# TIERLOCK_ALONE_BASE names another), none started after 2 minutes, and
# six others with -short, drawn by HEAD's commit (the same six for a
# commit, replayed by the -seed it prints). At nice 19 beside the race
# run a scene may miss its clock: the race run judges that, so these fail
# only on a leftover (-leaks).
alone_checks() {
  local rc=0 base=${TIERLOCK_ALONE_BASE:-}
  if [ -z "$base" ]; then
    # The commits not yet upstream; on the upstream's tip (a clean clone,
    # CI), the last commit's.
    base=$(git merge-base HEAD '@{upstream}' 2>/dev/null)
    if [ -z "$base" ] || [ "$base" = "$(git rev-parse HEAD)" ]; then
      base=HEAD~1
    fi
  fi
  scripts/alone.sh -leaks -budget 120 -changed "$base" || rc=1
  scripts/alone.sh -leaks -short -sample 6 || rc=1
  return $rc
}
background_checks() {
  local rc=0
  renice -n 19 -p "$BASHPID" >/dev/null || echo "renice failed: these checks run at normal priority"
  timed gofmt gofmt_check || rc=1
  timed vet go vet ./... || rc=1
  timed stress-vet sh -c 'cd stress && go vet ./...' || rc=1
  timed repocheck module_checks internal/repocheck 30m "$@" || rc=1
  timed compute compute_tests "$@" || rc=1
  timed explorers explore || rc=1
  timed alone alone_checks || rc=1
  return $rc
}
step checks background_checks "$@"

# Every other package's tests with the race detector, and the stress
# command's (a module of its own, stress/go.mod: its plots, Prometheus and
# terminal packages stay out of the library's module graph), but for the
# nemesis scenes that the traced step below runs (under -race too) and
# replays: each runs once (zktest.TracedStep). They wait on ZooKeeper's
# timeouts, faults and schedulers more than they compute, so four test
# processes run at once, in three lanes:
#   1. zklock's six longest scenes, the lease's on real servers and
#      ensembles (about 210 s idle), zkcompat, then the stress package's
#      longest tests ($stress_first, about 100 s);
#   2. zklock's other tests (-skip of the same names: none is lost, a new
#      test falls in it), the session package, then the stress package's
#      other tests and the stress module's other packages;
#   3. the library's other packages two at a time, runonce (about 260 s)
#      and tier first; interop (Curator's and kazoo's peers, about 65 s)
#      among them: in lane 2 it made that lane the race run's longest
#      (about 460 s of the idle run 137's 506; lane 1 about 420).
# The stress package's tests run one stress run at a time, 0.9 of a core
# for about 200 s: in a phase of their own after this run (an idle make
# test's 215 s of 771), they left the machine half idle. In two halves,
# each with a ZooKeeper of its own, at the end of lanes 1 and 2, they meet
# the end of lane 3 (its short packages; runonce and tier are done), not
# gocronlock's nor cronlock's fleets (beside the steps, loaded runs 8-10,
# those lost ticks). Each lane runs to a log of its own, printed when all
# have ended.
zklock_first='^(TestLeaseCountsFromTheWrite|TestShorterTimeoutAtReconnection|TestLeaseAgainstAStalledFollower|TestBurstOfLargeACLs|TestQuietSessionGrantsAtOnce|TestIdleSessionProofsAreOnTime)$'
stress_first='^(TestEveryImplementation|TestRecipeCurator|TestRecipeFaults|TestFaultLeader|TestFaultRestart|TestMatrixTiny)$'
lane1=(./zkcompat)
lane2=(./zklock/internal/session)
# lane runs zklock's tests that $1 $2 (-run or -skip, and the pattern)
# select, the packages after them one at a time, then the stress module's
# tests that $3 $4 select in the packages $5; each whatever the others'
# outcome; the go test flags of make test's arguments ($race_args) to
# each.
lane() {
  local sel=$1 pattern=$2 stress_sel=$3 stress_pattern=$4 stress_pkgs=$5 rc=0
  shift 5
  go test -race -count=1 -timeout 12m "$sel" "$pattern" "${race_args[@]}" ./zklock || rc=1
  go test -race -count=1 -p 1 -timeout 12m "${race_args[@]}" "$@" || rc=1
  (cd stress && go test -race -count=1 -p 1 -timeout 12m "$stress_sel" "$stress_pattern" "${race_args[@]}" $stress_pkgs) || rc=1
  return $rc
}
race_run() {
  race_args=("$@")
  local others rc=0 dir part
  others=$(go list ./runonce ./tier ./... | grep -vxF -f <(go list ./zklock "${lane1[@]}" "${lane2[@]}" "${compute_pkgs[@]}")) || return 1
  dir=$(mktemp -d)
  export TIERLOCK_TRACED_STEP=skip
  go test -race -c -o /dev/null ./zklock || rc=1 # built once, for both halves
  lane -run "$zklock_first" -run "$stress_first" . "${lane1[@]}" >"$dir/lane-1" 2>&1 &
  local first=$!
  lane -skip "$zklock_first" -skip "$stress_first" ./... "${lane2[@]}" >"$dir/lane-2" 2>&1 &
  local second=$!
  go test -race -count=1 -p 2 -timeout 12m "$@" $others >"$dir/lane-3" 2>&1 || rc=1
  wait "$first" || rc=1
  wait "$second" || rc=1
  for part in lane-1 lane-2 lane-3; do
    echo "(the race run's $part)"
    cat "$dir/$part"
  done
  rm -rf "$dir"
  return $rc
}
phase race race_run "$@"

# The steps after them wait more than they compute (ZooKeeper's timeouts,
# schedulers' ticks, faults): they run side by side.
steps_began=$SECONDS

# gocronlock is a module of its own, so that tierlock does not depend on
# gocron: vet and test it the same way.
step gocronlock module_checks gocronlock 8m "$@"
# cronlock (robfig/cron's adapter) too, so that tierlock does not depend
# on robfig/cron: its wrapper with real Crons, README's program built in a
# new module as a new user would, and the fleet test (internal/fleet): for
# every registered lock, three robfig/cron processes for 20 s, side by
# side, on a Redis and a ZooKeeper the test starts (about 60 s in all).
step cronlock module_checks cronlock 8m "$@"
# lockmetrics too, so that tierlock does not depend on Prometheus.
step lockmetrics module_checks lockmetrics 8m "$@"

# The trace points, the stress command's seeded bugs, the replay
# (internal/replay) of real runs recorded against a real ZooKeeper and of
# hand-made traces it must refuse (about 6 s), and the code's seeded bugs
# (internal/mutant), each in a short stress run or, for the bugs of the
# lease's bounds and the steps' timing, a scenario of its own process,
# recorded with the bug on: the replay must refuse the run at the step
# named, and replay the control runs clean (about 110 s).
replay_checks() {
  local rc=0
  go test -race -count=1 -tags tierlocktrace -run 'TestTrace|TestOn|TestRecorder|TestClass' ./internal/trace/ ./zklock/ ./tier/ || rc=1
  (cd stress && go test -count=1 -tags tierlockmutants -run TestMutant .) || rc=1
  go test -race -count=1 -tags tierlocktrace -run 'TestRecorded|TestHandMade' ./internal/replay/ || rc=1
  go test -count=1 -tags 'tierlocktrace tierlockmutants' -run TestCodeMutants ./internal/replay/ || rc=1
  return $rc
}
step replay replay_checks

# The nemesis tests recorded, under -race, and replayed through the model's
# client steps (docs/replay.md): every fault kind of tier's nemesis
# (partition, asymmetric, stall, drop, reset, flood; a drop and a stall with
# the fleet's credentials and a digest-only ACL; a guarded write's
# outcome across a partition and a drop; NewSession's polled state; the
# recipes' and the multi-lock's scenes) and zklock's expiry-only scenes.
# One directory per package: trace files are named by pid. A package whose
# tests fail is replayed all the same: what it recorded may say why. About
# 2.5 minutes.
nemesis_replayed() {
  local rc=0 tier_traces zklock_traces
  tier_traces=$(mktemp -d)
  zklock_traces=$(mktemp -d)
  TIERLOCK_TRACE="$tier_traces" go test -race -count=1 -tags tierlocktrace -run 'TestNemesis$|TestNemesisDigestACL$|TestNemesisTxn$|TestNemesisNewSession$|TestRecipeNemesis$|TestRecipeFlood$|TestRWNemesis$|TestSemNemesis$|TestMultiLockNemesis$' ./tier/ || rc=1
  go run ./internal/replay/cmd/replay "$tier_traces" || rc=1
  TIERLOCK_TRACE="$zklock_traces" go test -race -count=1 -tags tierlocktrace -run 'TestPositionAcrossFaults$|TestRevokeAcrossDisconnection$' ./zklock/ || rc=1
  go run ./internal/replay/cmd/replay "$zklock_traces" || rc=1
  rm -rf "$tier_traces" "$zklock_traces"
  return $rc
}
step nemesis nemesis_replayed

finish_steps gocronlock cronlock lockmetrics replay nemesis
echo "--- the steps side by side: $((SECONDS - steps_began)) s"
# The clock-judged tests are over: the checks still running (at nice 19)
# go on at normal priority. Beside a machine's other work at nice 0 (two
# busy loops on 2 cores) a nice-19 tree gets about 1 % of a core, and its
# explorers and alone runs took longer than the whole suite otherwise.
# Raising a priority takes the privilege CI's root has; without it they
# stay at 19.
unnice "${step_pids[checks]}"
finish_steps checks

if [ ${#failed[@]} -gt 0 ]; then
  {
    echo "make test: ${#failed[@]} phase(s) failed, $((SECONDS - suite_began)) s in all:"
    for name in "${failed[@]}"; do
      echo "  $name"
      failures "$name"
    done
  } >&2
  exit 1
fi
echo "make test: every phase passed, $((SECONDS - suite_began)) s in all"

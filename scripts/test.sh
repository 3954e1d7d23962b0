#!/usr/bin/env bash
# The whole test suite: installs ZooKeeper if missing, checks formatting and
# vet, then runs every package's tests with the race detector. Each test
# package starts its own real ZooKeeper (or uses TIERLOCK_ZK_SERVERS).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${TIERLOCK_ZK_SERVERS:-}" ]; then
  scripts/install-deps.sh
fi
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
go vet ./...
# The repository's own checks, a module of their own (internal/repocheck,
# so that the library does not require golang.org/x/mod): the zip go get
# downloads stays within 2 MB and holds no raw benchmark output, and every
# relative link in the Markdown files resolves (a few seconds).
(cd internal/repocheck && go vet ./... && go test -race -count=1 "$@" ./...)
# Every package's tests with the race detector, but for the nemesis scenes
# that the traced step below runs (under -race too) and replays: each runs
# once (zktest.TracedStep). Three packages at a time, not go test's two
# (one per core): they wait on ZooKeeper's timeouts, faults and schedulers
# more than they compute (two at a time kept the 2-core machine 64 % busy);
# the run took 631 s with two, 454 s with three.
began=$SECONDS
TIERLOCK_TRACED_STEP=skip go test -race -count=1 -p 3 -timeout 12m "$@" ./...
echo "--- the race run: $((SECONDS - began)) s"

# The steps after it wait more than they compute (ZooKeeper's timeouts,
# schedulers' ticks, faults): they run side by side, each to a log of its
# own, printed when it ends; the suite fails if any of them does.
logs=$(mktemp -d)
pids=()
names=()
step() {
  local name=$1
  shift
  ( set -e; "$@" ) >"$logs/$name.log" 2>&1 &
  pids+=($!)
  names+=("$name")
}

# The write path explored schedule by schedule (zklock/internal/writes):
# 100,000 schedules without the race detector (about 10 s; the race run
# above explores 10,000), and its seeded bugs, each found by the explorer.
# The lease explored schedule by schedule too (zklock/internal/session,
# docs/lease.md): 80,000 schedules on a virtual clock (25-45 s on the
# 2-core machine; the race run above explores 2,000 on one core), and the
# floor's seeded bugs, each refused by its property (about 5 s). The
# explorers compute: they run alone, one after the other, before the steps
# below, whose fleets a busy processor would make late (gocronlock's
# TestFleetScale ran 22 % of its ticks beside them).
explore() {
  go test -count=1 -run 'TestExplore$' ./zklock/internal/writes/
  go test -count=1 -tags tierlockmutants -run TestExploreFindsSeededBugs ./zklock/internal/writes/
  go test -count=1 -run 'TestLeaseExplore$' ./zklock/internal/session/
  go test -count=1 -tags tierlockmutants -run TestLeaseExploreFindsSeededBugs ./zklock/internal/session/
}
began=$SECONDS
explore
echo "--- the explorers: $((SECONDS - began)) s"
began=$SECONDS

# gocronlock is a module of its own, so that tierlock does not depend on
# gocron: vet and test it the same way.
step gocronlock sh -c 'cd gocronlock && go vet ./... && go test -race -count=1 -timeout 8m "$@" ./...' sh "$@"
# cronlock (robfig/cron's adapter) too, so that tierlock does not depend
# on robfig/cron: its wrapper with real Crons, README's program built in a
# new module as a new user would, and the fleet test (internal/fleet): for
# every registered lock, three robfig/cron processes for 20 s, side by
# side, on a Redis and a ZooKeeper the test starts (about 60 s in all).
step cronlock sh -c 'cd cronlock && go vet ./... && go test -race -count=1 -timeout 8m "$@" ./...' sh "$@"

# The trace points, the stress command's seeded bugs, the replay
# (internal/replay) of real runs recorded against a real ZooKeeper and of
# hand-made traces it must refuse (about 6 s), and the code's seeded bugs
# (internal/mutant), each in a short stress run or, for the bugs of the
# lease's bounds and the steps' timing, a scenario of its own process,
# recorded with the bug on: the replay must refuse the run at the step
# named, and replay the control runs clean (about 110 s).
replay_checks() {
  go test -race -count=1 -tags tierlocktrace -run 'TestTrace|TestOn|TestRecorder|TestClass' ./internal/trace/ ./zklock/ ./tier/
  go test -count=1 -tags tierlockmutants -run TestMutant ./stress/
  go test -race -count=1 -tags tierlocktrace -run 'TestRecorded|TestHandMade' ./internal/replay/
  go test -count=1 -tags 'tierlocktrace tierlockmutants' -run TestCodeMutants ./internal/replay/
}
step replay replay_checks

# The nemesis tests recorded, under -race, and replayed through the model's
# client steps (docs/replay.md): every fault kind of tier's nemesis
# (partition, asymmetric, stall, drop, reset, flood; a guarded write's
# outcome across a partition and a drop; NewSession's polled state; the
# recipes' and the multi-lock's scenes) and zklock's expiry-only scenes.
# One directory per package: trace files are named by pid. About 2.5
# minutes.
nemesis_replayed() {
  local tier_traces zklock_traces
  tier_traces=$(mktemp -d)
  zklock_traces=$(mktemp -d)
  TIERLOCK_TRACE="$tier_traces" go test -race -count=1 -tags tierlocktrace -run 'TestNemesis$|TestNemesisTxn$|TestNemesisNewSession$|TestRecipeNemesis$|TestRecipeFlood$|TestRWNemesis$|TestSemNemesis$|TestMultiLockNemesis$' ./tier/
  go run ./internal/replay/cmd/replay "$tier_traces"
  TIERLOCK_TRACE="$zklock_traces" go test -race -count=1 -tags tierlocktrace -run 'TestPositionAcrossFaults$|TestRevokeAcrossDisconnection$' ./zklock/
  go run ./internal/replay/cmd/replay "$zklock_traces"
  rm -rf "$tier_traces" "$zklock_traces"
}
step nemesis nemesis_replayed

failed=()
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then
    echo "--- step ${names[$i]}: ok"
  else
    failed+=("${names[$i]}")
    echo "--- step ${names[$i]}: FAILED"
  fi
  cat "$logs/${names[$i]}.log"
done
rm -rf "$logs"
echo "--- the steps side by side: $((SECONDS - began)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "make test: failed steps: ${failed[*]}" >&2
  exit 1
fi

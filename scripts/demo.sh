#!/usr/bin/env bash
# The demo: installs ZooKeeper if missing, then runs the stress comparison
# (it starts a local ZooKeeper itself unless TIERLOCK_ZK_SERVERS is set):
# 4 processes x 64 goroutines, every implementation side by side, about 20 s
# each, and writes an HTML report and the figures as JSON under out/.
#
# On the console: the comparison, its tables at most 120 columns wide (a
# wider one is split into panels that repeat the implementation's name);
# under it what each implementation is (tier is tierlock's lock, the one to
# use; zklock its process-level building block behind a sync.Mutex; gozk
# go-zookeeper's zk.Lock, the baseline); and warnings when the machine was
# saturated during a run, and that each ratio rests on one run (the spread
# of many: docs/matrix.md).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${TIERLOCK_ZK_SERVERS:-}" ]; then
  scripts/install-deps.sh
fi
mkdir -p out
# stress is a module of its own (stress/go.mod): built in its directory,
# run from here, so that out/ and any path given in "$@" are this one's.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -C stress -o "$bin/stress" .
"$bin/stress" -impl all -handoff -procs 4 -goroutines 64 -duration 20s \
  -report out/report.html -json out/report.json "$@"
echo
echo "report: $(pwd)/out/report.html (figures: out/report.json)"

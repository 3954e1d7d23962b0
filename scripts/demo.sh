#!/usr/bin/env bash
# The demo: installs ZooKeeper if missing, then runs the stress comparison
# (it starts a local ZooKeeper itself unless TIERLOCK_ZK_SERVERS is set):
# 4 processes x 64 goroutines, every implementation side by side, about 20 s
# each, and writes an HTML report and the figures as JSON under out/.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${TIERLOCK_ZK_SERVERS:-}" ]; then
  scripts/install-deps.sh
fi
mkdir -p out
go run ./stress -impl all -handoff -procs 4 -goroutines 64 -duration 20s \
  -report out/report.html -json out/report.json "$@"
echo
echo "report: $(pwd)/out/report.html (figures: out/report.json)"

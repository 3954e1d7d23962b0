#!/usr/bin/env bash
# The demo: installs ZooKeeper and redis-server if missing, then runs the
# shapes README gives speed figures for (stress -demo: its own local
# servers, a standalone ZooKeeper, a three-server ensemble, a redis-server)
# and sets each figure beside README's, in 3 to 4 minutes on two cores
# (make demo at 86425af: 3 min 19 s, the machine loaded by other work):
#
#   keyed     4 processes x 1,000 goroutines x 1,000 keys, one server:
#             tier, zk.Lock and redsync (README: 5.3x zk.Lock, 1.8x redsync,
#             0.08 requests per acquisition against 5, 0.22x its CPU)
#   ensemble  the same on three servers: tier and zk.Lock (README: 7.0x)
#   onepath   4 x 64 goroutines on one path: tier with hand-off, tier strict,
#             zk.Lock (README: hand-off "tens of times faster")
#
# Each shape runs 3 times, the implementations' order rotated each time, in
# windows shorter than README's (4 s after a 2 s warm-up keyed, 2 s after
# 1 s on one path; README's: 20 s after 5 s). The last table gives each
# figure's median, min-max and per-repeat values beside README's; above it
# each shape's full table. The checker checks every hold of every run: the
# demo fails (exit 1) on a mutual-exclusion violation or a lock error.
#
# Arguments go to stress -demo (stress -demo -h): -duration 20s -warmup 5s
# runs README's windows (each run 25 s instead of 6 s or 3 s), -demo-shapes
# onepath one shape.
# Each shape's figures, per repeat, are written to out/demo-<shape>.json.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
mkdir -p out
# stress is a module of its own (stress/go.mod): built in its directory,
# run from here, so that out/ and any path given in "$@" are this one's.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -C stress -o "$bin/stress" .
# The demo starts its own servers: README's figures are of local ones.
env -u TIERLOCK_ZK_SERVERS "$bin/stress" -demo -demo-out out "$@" | tee out/demo.txt
echo
echo "report: $(pwd)/out/demo.txt (figures per repeat: out/demo-*.json)"

#!/usr/bin/env bash
# README's test command on a clean clone of this checkout's HEAD, beside N busy
# cores: the run a contributor's shared machine gives.
#
#   scripts/loaded.sh            # two busy loops (`while :; do :; done`)
#   scripts/loaded.sh -n 0       # idle
#   scripts/loaded.sh -n 2 -k    # keep the clone and its log (kept anyway on a failure)
#   scripts/loaded.sh -c 'scripts/alone.sh -times times.tsv'   # another command, run in the clone
#
# It clones HEAD into a temporary directory with ../shared beside it (as CI
# has it), starts the busy loops, runs `CI=true bash .ci/run` there (or the
# command -c gives, run by bash in the clone), samples the load average every
# 30 s, stops the loops it started (by pid), and prints one line: the
# commit, the busy loops, the command, the wall time, the result, the load's
# median and peak. The run's whole output is in the clone's run.log.
set -euo pipefail
busy=2
keep=0
cmd='CI=true bash .ci/run'
while getopts "n:kc:" o; do
	case $o in
	n) busy=$OPTARG ;;
	k) keep=1 ;;
	c) cmd=$OPTARG ;;
	*) echo "usage: $0 [-n busy-loops] [-k] [-c command]" >&2; exit 2 ;;
	esac
done
top=$(git rev-parse --show-toplevel)
shared=$(cd "$top/.." && pwd)/shared
commit=$(git -C "$top" rev-parse --short HEAD)
work=$(mktemp -d /tmp/loaded.XXXXXX)
git clone -q "$top" "$work/main"
[ -d "$shared" ] && ln -s "$shared" "$work/shared"

pids=()
stop() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	if [ "$keep" = 0 ]; then rm -rf "$work"; fi
}
trap stop EXIT
for _ in $(seq 1 "$busy"); do
	bash -c 'while :; do :; done' &
	pids+=($!)
done
(while :; do cut -d' ' -f1 /proc/loadavg >>"$work/load"; sleep 30; done) &
pids+=($!)

start=$(date +%s)
rc=0
(cd "$work/main" && bash -c "$cmd") >"$work/run.log" 2>&1 || rc=$?
took=$(($(date +%s) - start))
load=$(sort -n "$work/load" | awk '{a[NR]=$1} END {if (NR) printf "median %s, peak %s", a[int((NR+1)/2)], a[NR]}')
result=passed
[ "$rc" = 0 ] || keep=1
[ "$rc" = 0 ] || result="FAILED (rc $rc; $(grep -m3 -E '^(--- FAIL|FAIL|LEAK)' "$work/run.log" | tr '\n' ' '))"
echo "$(date -u +%F) $commit busy=$busy [$cmd] ${took}s $result load: $load"
[ "$keep" = 1 ] && echo "log: $work/run.log"
exit "$rc"

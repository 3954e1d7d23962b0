#!/usr/bin/env bash
# The project's A/B: tier's throughput at four shapes, a build of the code
# against a build of an older commit, side by side on one ZooKeeper.
#
#   scripts/ab.sh OLD [NEW] [-r ROUNDS] [-s SHAPES]
#
# NEW defaults to HEAD, ROUNDS to 4, SHAPES (a comma-separated list of the
# names below) to all four. OLD and NEW may be the same commit: an A/A run,
# the spread the machine alone gives.
#
# Each commit is built in a worktree of its own (`go build -C stress -trimpath`:
# the worktree's path left out, so that an A/A run compares one binary); one
# throwaway ZooKeeper (scripts/zk.sh, port 22181) serves both. A round runs
# each shape with both builds, the order turned each round: 4x1000x1000 (4
# processes x 1000 goroutines x 1000 paths), 4x8x1, 4x8x1-handoff (4x8x1
# with hand-off), 4x8x16; each run 10 s after a 3 s warm-up (-probe 0). It prints one line a run (new
# / old throughput, p99, ZooKeeper requests per acquisition, the workers'
# CPU per acquisition) and each shape's median ratio with its range. Make it on an idle machine: the rounds'
# spread is what it can show.
set -euo pipefail
old=""
new=HEAD
rounds=4
only=""
while [ $# -gt 0 ]; do
	case "$1" in
	-r) rounds=$2; shift ;;
	-s) only=",$2,"; shift ;;
	*) if [ -z "$old" ]; then old=$1; else new=$1; fi ;;
	esac
	shift
done
[ -n "$old" ] || { sed -n '2,/^set -euo/s/^# \{0,1\}//p' "$0" | sed '$d' >&2; exit 2; }
top=$(git rev-parse --show-toplevel)
work=$(mktemp -d /tmp/ab.XXXXXX)
port=22181
cleanup() {
	TMPDIR=$work "$top/scripts/zk.sh" stop -p $port >/dev/null 2>&1 || true
	for b in old new; do git -C "$top" worktree remove --force "$work/$b" >/dev/null 2>&1 || true; done
	rm -rf "$work"
}
trap cleanup EXIT
for b in old new; do
	rev=$old
	[ $b = new ] && rev=$new
	git -C "$top" worktree add -q --detach "$work/$b" "$rev"
	go build -C "$work/$b/stress" -trimpath -o "$work/stress-$b" .
done
TMPDIR=$work "$top/scripts/zk.sh" start -p $port >/dev/null

run() { # build shape-args json
	"$work/stress-$1" -zk 127.0.0.1:$port -impl tier $2 -quiet -probe 0 -duration 10s -warmup 3s -json "$3" >/dev/null
}
shapes=("4x1000x1000|-procs 4 -goroutines 1000 -paths 1000"
	"4x8x1|-procs 4 -goroutines 8 -paths 1"
	"4x8x1-handoff|-procs 4 -goroutines 8 -paths 1 -handoff"
	"4x8x16|-procs 4 -goroutines 8 -paths 16")
for r in $(seq 1 "$rounds"); do
	for s in "${shapes[@]}"; do
		name=${s%%|*}
		args=${s#*|}
		[ -z "$only" ] || [[ $only == *",$name,"* ]] || continue
		if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
		for b in $order; do run $b "$args" "$work/$name.$r.$b.json"; done
		python3 - "$work/$name.$r" "$name" "$r" <<'EOF'
import json, sys
base, name, r = sys.argv[1:]
o, n = (json.load(open(f"{base}.{b}.json"))["results"][0] for b in ("old", "new"))
p99 = lambda d: d["acquire_latency_us"].get("p99", 0) / 1000
print(f"{name:14s} {r}: {n['acquisitions_per_s'] / o['acquisitions_per_s']:.3f}x "
      f"({n['acquisitions_per_s']:.0f} / {o['acquisitions_per_s']:.0f}/s), p99 {p99(n):.0f} / {p99(o):.0f} ms, "
      f"req {n['zk_requests_per_acquisition']:.3f} / {o['zk_requests_per_acquisition']:.3f}, "
      f"client CPU {n['cost']['client_cpu_per_acquisition_us']:.0f} / {o['cost']['client_cpu_per_acquisition_us']:.0f} us/acq", flush=True)
EOF
	done
done
python3 - "$work" <<'EOF'
import glob, json, os, statistics, sys
work = sys.argv[1]
ratios, cpu = {}, {}
for f in glob.glob(os.path.join(work, "*.new.json")):
    name = os.path.basename(f).split(".")[0]
    o = json.load(open(f.replace(".new.json", ".old.json")))["results"][0]
    n = json.load(open(f))["results"][0]
    ratios.setdefault(name, []).append(n["acquisitions_per_s"] / o["acquisitions_per_s"])
    cpu.setdefault(name, []).append(n["cost"]["client_cpu_per_acquisition_us"] / o["cost"]["client_cpu_per_acquisition_us"])
for name in sorted(ratios):
    v, c = ratios[name], cpu[name]
    print(f"{name:14s} median {statistics.median(v):.3f}x  range {min(v):.3f}-{max(v):.3f}  n={len(v)}; "
          f"client CPU per acquisition new/old median {statistics.median(c):.3f} ({min(c):.3f}-{max(c):.3f})")
EOF

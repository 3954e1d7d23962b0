#!/usr/bin/env bash
# Runs tests one at a time, each alone in a test binary of its own
# (go test -run '^Name$' -count=1 of its package), and names each test that
# fails so: a test must leave nothing behind, whatever runs after it. In a
# package's full run a goroutine a test leaves running (a hook's sleep, a
# session never closed) may end before the package's TestMain checks for
# leftovers (goleak), the later tests giving it time; alone, goleak finds
# it and the run names the test. A process a test started and left running
# past its binary's exit (a server, a peer) is found by an environment
# variable every run's processes inherit (TIERLOCK_ALONE_RUN), named with
# the test and killed by its pid.
#
#   scripts/alone.sh                    every test of every module, one by one (long: docs/testing.md)
#   scripts/alone.sh ./zklock ./tier    the tests of these packages of the root module (with -C, of that module)
#   scripts/alone.sh -C gocronlock      the tests of another module (its directory)
#   scripts/alone.sh -changed REF       the tests of the *_test.go files that differ from REF (commits and working tree)
#   scripts/alone.sh -sample N          N tests picked by -seed (default: HEAD's commit) from those selected
#   scripts/alone.sh -run REGEXP        only the tests whose names match
#   scripts/alone.sh -n ...             print the tests selected, run none
#
# Other flags: -short (each run with -short), -leaks (a test that fails
# alone for another reason is listed, but only a leftover goroutine or
# process fails the run), -budget SECONDS (start no test after that long;
# those not run are counted), -timeout D (each run's, default 15m), -times
# FILE (package, test, seconds, verdict: one line per run, tab-separated).
# Exit status 1 if a run failed (with -leaks: if one left something
# behind), 2 on a usage or build error.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

dry=0 short=() leaks_only=0 budget=0 timeout=15m times='' changed='' sample=0 seed='' only='' modules=()
while [ $# -gt 0 ]; do
  case $1 in
    -short) short=(-test.short) ;;
    -leaks) leaks_only=1 ;;
    -budget) budget=$2; shift ;;
    -timeout) timeout=$2; shift ;;
    -times) times=$2; shift ;;
    -changed) changed=$2; shift ;;
    -sample) sample=$2; shift ;;
    -seed) seed=$2; shift ;;
    -run) only=$2; shift ;;
    -n) dry=1 ;;
    -C) modules+=("$2"); shift ;;
    -h | -help | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "alone.sh: unknown flag $1" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
pkgs=("$@")
if [ ${#modules[@]} -eq 0 ]; then
  if [ ${#pkgs[@]} -gt 0 ]; then
    modules=(.)
  else
    mapfile -t modules < <(git ls-files '*go.mod' 'go.mod' | xargs -n1 dirname | sort -u)
  fi
fi
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
token="alone-$$-$RANDOM"

# list prints "module<TAB>import path<TAB>directory<TAB>test" for every
# test, example and fuzz target of the packages selected, read from the
# test files go test builds (no build tags), so that only the packages of
# the tests picked are built.
list() {
  local mod pkg dir files f
  for mod in "${modules[@]}"; do
    while IFS=$'\t' read -r pkg dir files; do
      for f in $files; do
        sed -n 's/^func \(\(Test\|Example\|Fuzz\)\([A-Z0-9_][A-Za-z0-9_]*\)\{0,1\}\)(.*/\1/p' "$dir/$f"
      done | grep -vx 'TestMain' | sort -u | while read -r name; do
        printf '%s\t%s\t%s\t%s\n' "$mod" "$pkg" "$dir" "$name"
      done
    done < <(cd "$root/$mod" && go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{"\t"}}{{.Dir}}{{"\t"}}{{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}{{end}}' "${pkgs[@]}" 2> >(grep -v 'matched no packages' >&2) | grep .)
  done
}

# build makes the test binary of package $2 of module $1 once, and prints
# its path.
build() {
  local bin
  bin="$work/$(echo "$2" | tr / _).test"
  if [ ! -x "$bin" ]; then
    if ! (cd "$root/$1" && go test -c -o "$bin" "$2") >"$work/build.log" 2>&1; then
      cat "$work/build.log" >&2
      return 1
    fi
  fi
  echo "$bin"
}

# changed prints "directory<TAB>name" for the tests, examples and fuzz
# targets declared in the *_test.go files that differ from $changed (its
# commits since and the working tree, new files too).
changed_tests() {
  if ! git rev-parse -q --verify "$changed^{commit}" >/dev/null; then
    echo "alone.sh: no commit $changed here (a shallow clone?): no changed tests" >&2
    return 0
  fi
  { git diff --name-only "$changed" -- '*_test.go'; git ls-files --others --exclude-standard -- '*_test.go'; } |
    sort -u | while read -r f; do
      [ -f "$f" ] || continue
      sed -n 's/^func \(\(Test\|Example\|Fuzz\)\([A-Z0-9_][A-Za-z0-9_]*\)\{0,1\}\)(.*/\1/p' "$f" |
        sed "s|^|$root/$(dirname "$f")\t|"
    done | sort -u
}

list >"$work/all" || exit $?
cp "$work/all" "$work/selected"
if [ -n "$changed" ]; then
  changed_tests >"$work/changed"
  awk -F'\t' 'NR == FNR { want[$1 "\t" $2]; next } ($3 "\t" $4) in want' "$work/changed" "$work/all" >"$work/selected"
fi
if [ -n "$only" ]; then
  awk -F'\t' -v re="$only" '$4 ~ re' "$work/selected" >"$work/tmp" && mv "$work/tmp" "$work/selected"
fi
if [ "$sample" -gt 0 ]; then
  [ -n "$seed" ] || seed=$(( 0x$(git rev-parse --short=7 HEAD 2>/dev/null || echo 1) ))
  # (no head: under pipefail, its early exit fails the pipeline)
  awk -v seed="$seed" 'BEGIN { srand(seed) } { print rand() "\t" $0 }' "$work/selected" | sort -n | cut -f2- |
    awk -v n="$sample" 'NR <= n' >"$work/tmp"
  mv "$work/tmp" "$work/selected"
  echo "alone.sh: a sample of $sample (-seed $seed) of $(wc -l <"$work/all") tests"
fi
total=$(wc -l <"$work/selected")
echo "alone.sh: $total test(s) to run alone${short:+ with -short}"
if [ "$dry" -eq 1 ]; then
  cut -f2,4 "$work/selected" | tr '\t' ' '
  exit 0
fi

# leftovers prints the processes that still carry this run's token: started
# by the test binary just ended (or its children) and left running.
leftovers() {
  local env pid
  for env in /proc/[0-9]*/environ; do
    pid=${env#/proc/}
    pid=${pid%/environ}
    [ "$pid" = "$$" ] && continue
    if grep -qzxF "TIERLOCK_ALONE_RUN=$1" "$env" 2>/dev/null; then
      echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-160)"
    fi
  done
}

began=$SECONDS n=0 failed=() leaked=() notrun=0
while IFS=$'\t' read -r mod pkg dir name; do
  if [ "$budget" -gt 0 ] && [ $((SECONDS - began)) -ge "$budget" ]; then
    notrun=$((notrun + 1))
    continue
  fi
  n=$((n + 1))
  if ! bin=$(build "$mod" "$pkg"); then
    echo "alone.sh: cannot build $pkg's tests" >&2
    exit 2
  fi
  log="$work/run.log"
  run_token="$token-$n"
  t0=$(date +%s.%N)
  (cd "$dir" && TIERLOCK_ALONE_RUN=$run_token exec "$bin" -test.run "^$name\$" -test.count=1 -test.v \
    -test.timeout "$timeout" "${short[@]}") >"$log" 2>&1 </dev/null
  rc=$?
  secs=$(echo "$(date +%s.%N) - $t0" | bc)
  left=$(leftovers "$run_token")
  verdict=ok why=''
  if grep -q 'found unexpected goroutines' "$log"; then
    verdict=LEAK why='goroutines left running (goleak)'
  fi
  if [ -n "$left" ]; then
    verdict=LEAK why="${why:+$why; }processes left running: $(echo "$left" | cut -d' ' -f1 | tr '\n' ' ')"
    echo "$left" | while read -r pid _; do kill -KILL "$pid" 2>/dev/null; done
  fi
  if [ "$verdict" = ok ] && [ $rc -ne 0 ]; then
    verdict=FAIL why="exit $rc"
  fi
  if [ "$verdict" = ok ] && grep -q -- "^--- SKIP: $name " "$log"; then
    verdict=skip
  fi
  printf '%-5s %s %s (%.1f s)%s\n' "$verdict" "$pkg" "$name" "$secs" "${why:+: $why}"
  [ -z "$times" ] || printf '%s\t%s\t%.2f\t%s\n' "$pkg" "$name" "$secs" "$verdict" >>"$times"
  case $verdict in
    LEAK)
      leaked+=("$pkg $name: $why")
      sed -n '/found unexpected goroutines/,$p' "$log" | head -60 | sed 's/^/    /'
      [ -z "$left" ] || echo "$left" | sed 's/^/    left: /'
      ;;
    FAIL)
      failed+=("$pkg $name")
      tail -40 "$log" | sed 's/^/    /'
      ;;
  esac
done <"$work/selected"

echo "alone.sh: $n run alone in $((SECONDS - began)) s: ${#leaked[@]} left something behind, ${#failed[@]} failed otherwise${budget:+$([ "$notrun" -gt 0 ] && echo ", $notrun not run (the budget of $budget s)")}"
for f in "${leaked[@]}"; do echo "  left something behind: $f"; done
for f in "${failed[@]}"; do echo "  failed alone: $f"; done
[ ${#leaked[@]} -eq 0 ] || exit 1
[ ${#failed[@]} -eq 0 ] || [ "$leaks_only" -eq 1 ] || exit 1
exit 0

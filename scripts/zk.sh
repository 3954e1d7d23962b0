#!/usr/bin/env bash
# A throwaway ZooKeeper for trying tierlock by hand: Debian's ZooKeeper 3.8
# (scripts/install-deps.sh installs it), standalone, on 127.0.0.1, in the
# background.
#
#   scripts/zk.sh start  [-p PORT]   start it and wait until it serves (default port 2181)
#   scripts/zk.sh status [-p PORT]   say whether it runs, and what srvr says
#   scripts/zk.sh stop   [-p PORT]   stop the server that start started (its pidfile), nothing else
#
# The port is -p, else $TIERLOCK_ZK_PORT, else 2181. Everything lives in
# ${TMPDIR:-/tmp}/tierlock-zk-PORT: zoo.cfg, data/, server.log, server.pid.
# Its znodes survive a stop and a start; delete the directory (stopped) to
# begin empty. Exit codes: 0 ok; 1 could not start or stop (the server's
# own error is shown); 2 usage; 3 status: not running.
set -euo pipefail

usage() {
  sed -n '2,14s/^# \{0,1\}//p' "$0" >&2
  exit 2
}

cmd=""
port="${TIERLOCK_ZK_PORT:-2181}"
while [ $# -gt 0 ]; do
  case "$1" in
    start|stop|status) [ -z "$cmd" ] || usage; cmd="$1" ;;
    -p|--port) [ $# -ge 2 ] || usage; port="$2"; shift ;;
    -p*) port="${1#-p}" ;;
    -h|--help|help) usage ;;
    *) echo "zk.sh: unknown argument $1" >&2; usage ;;
  esac
  shift
done
[ -n "$cmd" ] || usage
case "$port" in
  ''|*[!0-9]*) echo "zk.sh: port '$port' is not a number" >&2; exit 2 ;;
esac
if [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
  echo "zk.sh: port $port is out of range" >&2; exit 2
fi

jar=/usr/share/java/zookeeper.jar
slf4j=/usr/share/java/slf4j-simple.jar
conf=/etc/zookeeper/conf
dir="${TMPDIR:-/tmp}/tierlock-zk-$port"
cfg="$dir/zoo.cfg"
log="$dir/server.log"
pidfile="$dir/server.pid"
addr="127.0.0.1:$port"

# ours prints the pid of the server this script started on this port, if
# it still runs: the pidfile's pid, checked against the process's command
# line so that a recycled pid is never taken for it.
ours() {
  [ -f "$pidfile" ] || return 1
  local pid
  pid="$(cat "$pidfile" 2>/dev/null)" || return 1
  case "$pid" in ''|*[!0-9]*) return 1 ;; esac
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "ZooKeeperServerMain $cfg" || return 1
  echo "$pid"
}

# fourletter sends a four-letter word to the port and prints the answer
# (bash's /dev/tcp: no nc needed); it fails when nothing accepts.
fourletter() {
  timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf %s "$2" >&3 && cat <&3' _ "$port" "$1" 2>/dev/null
}

# accepting reports whether something accepts connections on the port.
accepting() {
  timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$port" 2>/dev/null
}

# tail_log shows the end of what the server logged since this start, Java's
# stack frames left out.
tail_log() {
  echo "--- the last lines of $log (stack frames left out):" >&2
  awk '/^=== .* zk\.sh start on /{n=0} {line[++n]=$0} END{for(i=2;i<=n;i++) print line[i]}' "$log" |
    grep -v "^$(printf '\t')at " | tail -n 10 >&2 || true
  echo "---" >&2
}

start() {
  local pid popt=""
  [ "$port" = 2181 ] || popt=" -p $port"
  if pid="$(ours)"; then
    echo "ZooKeeper already runs on $addr (pid $pid); stop it with: scripts/zk.sh stop$popt"
    return 0
  fi
  if [ ! -f "$jar" ] || ! command -v java >/dev/null 2>&1; then
    echo "zk.sh: ZooKeeper is not installed (need java and $jar): run scripts/install-deps.sh" >&2
    return 1
  fi
  local taken=""
  if accepting; then
    taken=1 # the server's own error says what happened; we only wait for it
  fi
  mkdir -p "$dir/data"
  cat >"$cfg" <<EOF
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
maxClientCnxns=0
maxCnxns=0
EOF
  local cp="$conf:$jar"
  [ -f "$slf4j" ] && cp="$cp:$slf4j"
  printf '\n=== %s zk.sh start on %s\n' "$(date '+%F %T')" "$addr" >>"$log"
  # A session of its own (setsid): Ctrl-C in this terminal does not reach
  # it. Its output, SLF4J's notices included, goes to the log only.
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$pidfile" \
    java -Xms32m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Dzookeeper.admin.enableServer=false \
    -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -Dorg.slf4j.simpleLogger.showDateTime=true \
    -cp "$cp" org.apache.zookeeper.server.ZooKeeperServerMain "$cfg" \
    </dev/null >>"$log" 2>&1 &
  local launcher=$!
  local deadline=$((SECONDS + 60))
  while :; do
    pid="$(cat "$pidfile" 2>/dev/null || true)"
    if ! kill -0 "$launcher" 2>/dev/null; then
      wait "$launcher" 2>/dev/null || true
      rm -f "$pidfile"
      echo "zk.sh: ZooKeeper could not start on $addr" >&2
      tail_log
      if [ -n "$taken" ]; then
        echo "port $port was already taken: something else listens on $addr (ss -ltnp | grep :$port); try -p PORT" >&2
      fi
      return 1
    fi
    # While the port was taken by someone else, an answer proves nothing:
    # wait for our server to give up (or, unlikely, to bind after all).
    # ruok answers imok before the server serves; srvr tells its mode.
    if [ -z "$taken" ] && fourletter srvr | grep -q '^Mode: '; then
      break
    fi
    if [ -n "$taken" ] && [ "$SECONDS" -ge "$((deadline - 45))" ]; then
      taken="" # it did not give up in 15 s: it may have bound after all
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      kill "$launcher" 2>/dev/null || true
      rm -f "$pidfile"
      echo "zk.sh: ZooKeeper did not serve on $addr within 60 s; stopped it" >&2
      tail_log
      return 1
    fi
    sleep 0.2
  done
  echo "ZooKeeper $(fourletter srvr | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p') serves on $addr (pid $pid; data and log in $dir)"
  if [ "$port" != 2181 ]; then
    echo "  use it:  export TIERLOCK_ZK_SERVERS=$addr   (or -zk $addr)"
  else
    echo "  use it:  go run ./cmd/tierlock ls /   (tierlock and the examples default to $addr)"
  fi
  echo "  stop it: scripts/zk.sh stop$popt"
}

stop() {
  local pid
  if ! pid="$(ours)"; then
    rm -f "$pidfile"
    echo "no ZooKeeper started by zk.sh runs on $addr"
    return 0
  fi
  kill "$pid"
  local i
  for i in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
  echo "stopped ZooKeeper on $addr (pid $pid); data and log stay in $dir"
}

status() {
  local pid
  if pid="$(ours)"; then
    echo "ZooKeeper runs on $addr (pid $pid; data and log in $dir)"
    fourletter srvr | sed 's/^/  /' || true
    return 0
  fi
  if accepting; then
    echo "no ZooKeeper started by zk.sh on $addr, but something else listens there"
  else
    echo "no ZooKeeper runs on $addr"
  fi
  return 3
}

"$cmd"

#!/usr/bin/env bash
# Installs what tierlock's tests, examples and stress command need on a
# Debian machine, and does nothing when all is present:
#   - ZooKeeper 3.8 (which brings Java) and the SLF4J binding that lets the
#     server's errors reach its log;
#   - the peers of the interop tests: Curator's recipes (Java, compiled at
#     test time with javac from a JDK) and kazoo (Python, run by
#     /usr/bin/python3);
#   - spin and a C compiler, for the protocol models under model/;
#   - redis-server, the baseline of cronlock's fleet test (a Redis lock in a
#     robfig/cron JobWrapper, as robfig users write it today);
#   - libfaketime, under which the cron fleets' documented runs start a
#     ZooKeeper server whose clock is off the hosts'.
set -euo pipefail

missing=()
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
[ -f /usr/share/java/slf4j-simple.jar ] || missing+=(libslf4j-java)
[ -f /usr/share/java/curator-recipes.jar ] || missing+=(libcurator-recipes-java)
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
/usr/bin/python3 -c 'import kazoo' >/dev/null 2>&1 || missing+=(python3-kazoo)
command -v spin >/dev/null 2>&1 || missing+=(spin)
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v faketime >/dev/null 2>&1 || missing+=(faketime)
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: need ${missing[*]} but apt-get is not available; install them or set TIERLOCK_ZK_SERVERS" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

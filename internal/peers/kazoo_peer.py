"""kazoo_peer is tierlock's stand-in for a Python job on kazoo: it locks
with kazoo's Lock, one instance per thread and path. Package peers runs it
with the system interpreter (/usr/bin/python3), which has Debian's
python3-kazoo.

Modes (after the options):

  loop  <servers> <path> <threads> <end_unix_millis> <hold_micros> <file> <label>
      (end_unix_millis 0: once connected, create <file>.ready.<label> and wait
      for <file>.go, which holds the end: the driver's start barrier)
      each thread acquires and releases until the wall clock reaches
      end_unix_millis and appends
      "E <label> <pid> <thread>" after acquiring and "X <label> <pid>
      <thread>" before releasing to file, each line one write(2) on an
      O_APPEND descriptor; then prints "holds <n>".
  serve <servers> <session_millis> <threads> <path>...
      prints "ready", then obeys lines on stdin: "A <t> <p>" (thread t
      acquires path p; answers "H <t> <seq>" or "F <t> <reason>"),
      "R <t> <p>" (answers "U <t>" or "F <t> <reason>"); stdin's end
      releases everything and exits.

Options: --no-extra leaves out extra_lock_patterns=("-lock-",), so that
kazoo counts only its own nodes as contenders (what kazoo does by default);
--read takes kazoo's ReadLock instead of its Lock.
"""

import os
import queue
import sys
import threading
import time

from kazoo.client import KazooClient

EXTRA = ("-lock-",)


def make_lock(client, path, opts):
    extra = () if "--no-extra" in opts else EXTRA
    if "--read" in opts:
        return client.ReadLock(path, "kazoo_peer", extra_lock_patterns=extra)
    return client.Lock(path, "kazoo_peer", extra_lock_patterns=extra)


def sequence(node):
    if not node:
        return -1
    digits = node[-11:].lstrip("_")
    try:
        return int(digits)
    except ValueError:
        return -1


def connect(servers, session_millis):
    client = KazooClient(hosts=servers, timeout=session_millis / 1000.0)
    client.start(timeout=30)
    return client


def start_barrier(end, file, label):
    """The start barrier of loop mode: an end of 0 means that the driver
    sets the window once every member is connected. The member says it is
    ready by creating <file>.ready.<label>, then waits for <file>.go, which
    holds the end (unix ms)."""
    if end != 0:
        return end
    open(file + ".ready." + label, "wb").close()
    while True:
        try:
            with open(file + ".go") as f:
                v = f.read().strip()
            if v:
                return int(v) / 1000.0
        except FileNotFoundError:
            pass
        time.sleep(0.005)


def loop(args, opts):
    servers, path, threads, end_millis, hold_micros, file, label = args
    threads, end, hold = int(threads), int(end_millis) / 1000.0, int(hold_micros) / 1e6
    client = connect(servers, 10000)
    end = start_barrier(end, file, label)
    fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    pid = os.getpid()
    counts = [0] * threads
    failures = []

    def run(t):
        lock = make_lock(client, path, opts)
        enter = ("E %s %d %d\n" % (label, pid, t)).encode()
        leave = ("X %s %d %d\n" % (label, pid, t)).encode()
        try:
            while time.time() < end:
                lock.acquire()
                try:
                    os.write(fd, enter)
                    if hold > 0:
                        time.sleep(hold)
                    os.write(fd, leave)
                finally:
                    lock.release()
                counts[t] += 1
        except Exception as e:  # reported below, the run fails
            failures.append(repr(e))

    ts = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    os.close(fd)
    client.stop()
    client.close()
    if failures:
        sys.stderr.write("kazoo_peer: %s\n" % failures[0])
        return 1
    print("holds %d" % sum(counts), flush=True)
    return 0


def serve(args, opts):
    servers, session_millis, threads = args[0], int(args[1]), int(args[2])
    paths = args[3:]
    client = connect(servers, session_millis)
    out_lock = threading.Lock()

    def say(line):
        with out_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    queues = [queue.Queue() for _ in range(threads)]

    def run(t):
        locks = [make_lock(client, p, opts) for p in paths]
        while True:
            cmd = queues[t].get()
            if cmd is None:
                for lock in locks:
                    if lock.is_acquired:
                        lock.release()
                return
            op, p = cmd
            try:
                if op == "A":
                    locks[p].acquire()
                    say("H %d %d" % (t, sequence(locks[p].node)))
                else:
                    locks[p].release()
                    say("U %d" % t)
            except Exception as e:
                say("F %d %s" % (t, repr(e).replace("\n", " ")))

    ts = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    say("ready")
    for line in sys.stdin:
        parts = line.split()
        if len(parts) != 3 or parts[0] not in ("A", "R"):
            continue
        t, p = int(parts[1]), int(parts[2])
        if 0 <= t < threads and 0 <= p < len(paths):
            queues[t].put((parts[0], p))
    for q in queues:
        q.put(None)
    for t in ts:
        t.join(10)
    client.stop()
    client.close()
    return 0


def main(argv):
    opts = [a for a in argv if a.startswith("--")]
    args = [a for a in argv if not a.startswith("--")]
    if len(args) == 8 and args[0] == "loop":
        return loop(args[1:], opts)
    if len(args) >= 5 and args[0] == "serve":
        return serve(args[1:], opts)
    sys.stderr.write("usage: kazoo_peer.py [--no-extra] [--read] loop|serve ...\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

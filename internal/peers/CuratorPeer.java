// CuratorPeer is tierlock's stand-in for a Java service on Curator: it
// locks with Curator's InterProcessMutex, one instance per thread and
// path, as services that give each thread its own lock do. It is compiled
// at test time against the Debian jars by package peers (see peers.go).
//
// Modes:
//
//	loop  <servers> <path> <threads> <endUnixMillis> <holdMicros> <file> <label>
//	    (endUnixMillis 0: once connected, create <file>.ready.<label> and wait
//	    for <file>.go, which holds the end: the driver's start barrier)
//	    each thread acquires and releases until the wall clock reaches
//	    endUnixMillis and
//	    appends "E <label> <pid> <thread>" after acquiring and
//	    "X <label> <pid> <thread>" before releasing to file, each line one
//	    write(2) on an O_APPEND descriptor; then prints "holds <n>".
//	rwloop <servers> <path> <threads> <endUnixMillis> <holdMicros> <file> <label> <readPermille>
//	    as loop, on an InterProcessReadWriteLock per thread: each round takes
//	    the read lock with probability readPermille/1000, else the write lock,
//	    and appends "R|W <label> <pid> <thread>" after acquiring and
//	    "r|w <label> <pid> <thread>" before releasing; prints "holds <n>".
//	semloop <servers> <path> <threads> <endUnixMillis> <holdMicros> <file> <label> <leases>
//	    as loop, on one InterProcessSemaphoreV2 of <leases> leases shared by
//	    the threads: "S ..." after acquiring a lease, "s ..." before
//	    returning it; prints "holds <n>".
//	serve <servers> <sessionMillis> <threads> <path>...
//	    prints "ready", then obeys lines on stdin: "A <t> <p>" (thread t
//	    acquires path p; answers "H <t> <seq>" or "F <t> <reason>"),
//	    "R <t> <p>" (answers "U <t>" or "F <t> <reason>"); stdin's end
//	    releases everything and exits.
//	--rw serve ...
//	    serve with an InterProcessReadWriteLock per thread and path:
//	    "A <t> <p> r" takes its read lock, "A <t> <p> w" its write lock
//	    (answered "H <t> -1"); "R <t> <p>" releases what the thread holds.
//	--revocable serve ...
//	    serve with each mutex made revocable (makeRevocable, before each
//	    acquisition, since Curator forgets it on release): when a
//	    revocation request for thread t's node on path p arrives, the peer
//	    prints "V <t> <p>", and thread t releases that path if it holds it
//	    and prints "Y <t> <p>" ("N <t> <p>" if it held nothing). In any
//	    serve mode, "K <t> <node>" has thread t call
//	    Revoker.attemptRevoke(client, node) (answers "K <t>" or "F <t>
//	    <reason>").
//	--leases=<n> serve ...
//	    serve with one InterProcessSemaphoreV2 of n leases per path, shared
//	    by the threads: "A <t> <p> <k>" takes k leases (answered
//	    "H <t> -1"), "R <t> <p>" returns them.
//	--namespace=<ns> (any mode)
//	    the client's namespace (CuratorFrameworkFactory.builder().namespace):
//	    every path lives under /<ns>, which Curator creates if missing.
import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collection;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.RevocationListener;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorPeer {
    /** Exposes the node of the calling thread's hold, to report its sequence. */
    static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework c, String path) {
            super(c, path);
        }

        String node() {
            return getLockPath();
        }
    }

    static long sequence(String node) {
        if (node == null) {
            return -1;
        }
        int i = node.lastIndexOf("-lock-");
        try {
            return Long.parseLong(node.substring(i + "-lock-".length()));
        } catch (RuntimeException e) {
            return -1;
        }
    }

    /** Curator's namespace (--namespace=), or null: every path lives under it. */
    static String namespace;

    static CuratorFramework connect(String servers, int sessionMillis) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder().connectString(servers)
                .sessionTimeoutMs(sessionMillis).connectionTimeoutMs(10000)
                .retryPolicy(new ExponentialBackoffRetry(50, 20, 1000)).namespace(namespace).build();
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no connection to " + servers);
        }
        return c;
    }

    public static void main(String[] args) throws Exception {
        boolean rw = false;
        boolean revocable = false;
        int leases = 0;
        while (args.length > 0 && args[0].startsWith("--")) {
            if (args[0].equals("--rw")) {
                rw = true;
            } else if (args[0].equals("--revocable")) {
                revocable = true;
            } else if (args[0].startsWith("--leases=")) {
                leases = Integer.parseInt(args[0].substring("--leases=".length()));
            } else if (args[0].startsWith("--namespace=")) {
                namespace = args[0].substring("--namespace=".length());
            } else {
                System.err.println("unknown option " + args[0]);
                System.exit(2);
            }
            args = Arrays.copyOfRange(args, 1, args.length);
        }
        if ((rw || revocable || leases > 0) && !(args.length >= 5 && args[0].equals("serve"))) {
            System.err.println("usage: CuratorPeer --rw|--revocable|--leases=<n> serve ...");
            System.exit(2);
        }
        if (args.length >= 5 && args[0].equals("serve")) {
            serve(args, rw, revocable, leases);
        } else if (args.length >= 7 && args[0].equals("loop")) {
            loop(args);
        } else if (args.length >= 9 && (args[0].equals("rwloop") || args[0].equals("semloop"))) {
            recipeLoop(args);
        } else {
            System.err.println("usage: CuratorPeer loop|rwloop|semloop|serve ...");
            System.exit(2);
        }
    }

    static void loop(String[] a) throws Exception {
        String servers = a[1], path = a[2], label = a[7];
        int threads = Integer.parseInt(a[3]);
        long holdMicros = Long.parseLong(a[5]);
        long pid = ProcessHandle.current().pid();
        CuratorFramework c = connect(servers, 10000);
        long end = startBarrier(Long.parseLong(a[4]), a[6], label);
        AtomicLong holds = new AtomicLong();
        try (FileOutputStream out = new FileOutputStream(a[6], true)) {
            Thread[] ts = new Thread[threads];
            Throwable[] failed = new Throwable[1];
            for (int t = 0; t < threads; t++) {
                final int id = t;
                ts[t] = new Thread(() -> {
                    Mutex m = new Mutex(c, path);
                    byte[] enter = ("E " + label + " " + pid + " " + id + "\n").getBytes(StandardCharsets.US_ASCII);
                    byte[] exit = ("X " + label + " " + pid + " " + id + "\n").getBytes(StandardCharsets.US_ASCII);
                    try {
                        while (System.currentTimeMillis() < end) {
                            m.acquire();
                            try {
                                out.write(enter);
                                if (holdMicros > 0) {
                                    Thread.sleep(holdMicros / 1000, (int) (holdMicros % 1000) * 1000);
                                }
                                out.write(exit);
                            } finally {
                                m.release();
                            }
                            holds.incrementAndGet();
                        }
                    } catch (Throwable e) {
                        synchronized (failed) {
                            failed[0] = e;
                        }
                    }
                });
                ts[t].start();
            }
            for (Thread t : ts) {
                t.join();
            }
            if (failed[0] != null) {
                failed[0].printStackTrace();
                System.exit(1);
            }
        } finally {
            c.close();
        }
        System.out.println("holds " + holds.get());
    }

    /**
     * The start barrier of loop mode: an end of 0 means that the driver
     * sets the window once every member is connected. The member says it
     * is ready by creating <file>.ready.<label>, then waits for <file>.go,
     * which holds the end (unix ms).
     */
    static long startBarrier(long end, String file, String label) throws Exception {
        if (end != 0) {
            return end;
        }
        java.nio.file.Files.write(java.nio.file.Paths.get(file + ".ready." + label), new byte[0]);
        java.nio.file.Path go = java.nio.file.Paths.get(file + ".go");
        while (true) {
            if (java.nio.file.Files.exists(go)) {
                String v = new String(java.nio.file.Files.readAllBytes(go), StandardCharsets.US_ASCII).trim();
                if (!v.isEmpty()) {
                    return Long.parseLong(v);
                }
            }
            Thread.sleep(5);
        }
    }

    static void recipeLoop(String[] a) throws Exception {
        boolean rw = a[0].equals("rwloop");
        String servers = a[1], path = a[2], label = a[7];
        int threads = Integer.parseInt(a[3]);
        long end = Long.parseLong(a[4]);
        long holdMicros = Long.parseLong(a[5]);
        int param = Integer.parseInt(a[8]);
        long pid = ProcessHandle.current().pid();
        CuratorFramework c = connect(servers, 10000);
        AtomicLong holds = new AtomicLong();
        InterProcessSemaphoreV2 sem = rw ? null : new InterProcessSemaphoreV2(c, path, param);
        try (FileOutputStream out = new FileOutputStream(a[6], true)) {
            Thread[] ts = new Thread[threads];
            Throwable[] failed = new Throwable[1];
            for (int t = 0; t < threads; t++) {
                final int id = t;
                ts[t] = new Thread(() -> {
                    InterProcessReadWriteLock lock = rw ? new InterProcessReadWriteLock(c, path) : null;
                    java.util.Random rnd = new java.util.Random(pid * 31 + id);
                    String tail = " " + label + " " + pid + " " + id + "\n";
                    try {
                        while (System.currentTimeMillis() < end) {
                            String enter, exit;
                            InterProcessLock l = null;
                            Lease lease = null;
                            if (rw) {
                                boolean read = rnd.nextInt(1000) < param;
                                l = read ? lock.readLock() : lock.writeLock();
                                enter = read ? "R" : "W";
                                exit = read ? "r" : "w";
                                l.acquire();
                            } else {
                                enter = "S";
                                exit = "s";
                                lease = sem.acquire();
                            }
                            try {
                                out.write((enter + tail).getBytes(StandardCharsets.US_ASCII));
                                if (holdMicros > 0) {
                                    Thread.sleep(holdMicros / 1000, (int) (holdMicros % 1000) * 1000);
                                }
                                out.write((exit + tail).getBytes(StandardCharsets.US_ASCII));
                            } finally {
                                if (l != null) {
                                    l.release();
                                } else {
                                    sem.returnLease(lease);
                                }
                            }
                            holds.incrementAndGet();
                        }
                    } catch (Throwable e) {
                        synchronized (failed) {
                            failed[0] = e;
                        }
                    }
                });
                ts[t].start();
            }
            for (Thread t : ts) {
                t.join();
            }
            if (failed[0] != null) {
                failed[0].printStackTrace();
                System.exit(1);
            }
        } finally {
            c.close();
        }
        System.out.println("holds " + holds.get());
    }

    /**
     * One thread's locks in serve mode: a mutex, a read/write lock, or
     * leases of the shared semaphore, per path; it remembers what it holds.
     */
    static final class Held {
        final Mutex[] mutexes;
        final InterProcessReadWriteLock[] rwLocks;
        final InterProcessSemaphoreV2[] sems;
        final InterProcessLock[] rwHeld;
        /** Revocation listeners (--revocable), set again before each acquisition: Curator forgets them on release. */
        final RevocationListener<InterProcessMutex>[] listeners;
        @SuppressWarnings("unchecked")
        final Collection<Lease>[] leases;

        @SuppressWarnings("unchecked")
        Held(CuratorFramework c, String[] paths, boolean rw, InterProcessSemaphoreV2[] sems) {
            int n = paths.length;
            this.sems = sems;
            mutexes = new Mutex[n];
            rwLocks = new InterProcessReadWriteLock[n];
            rwHeld = new InterProcessLock[n];
            listeners = new RevocationListener[n];
            leases = new Collection[n];
            for (int p = 0; p < n; p++) {
                if (rw) {
                    rwLocks[p] = new InterProcessReadWriteLock(c, paths[p]);
                } else if (sems == null) {
                    mutexes[p] = new Mutex(c, paths[p]);
                }
            }
        }

        /** Takes path p as cmd says; returns the sequence to report. */
        long acquire(int p, String[] cmd) throws Exception {
            if (sems != null) {
                int k = cmd.length > 3 ? Integer.parseInt(cmd[3]) : 1;
                leases[p] = sems[p].acquire(k);
                return -1;
            }
            if (rwLocks[p] != null) {
                InterProcessLock l = cmd.length > 3 && cmd[3].equals("r") ? rwLocks[p].readLock() : rwLocks[p].writeLock();
                l.acquire();
                rwHeld[p] = l;
                return -1;
            }
            if (listeners[p] != null) {
                mutexes[p].makeRevocable(listeners[p]);
            }
            mutexes[p].acquire();
            return sequence(mutexes[p].node());
        }

        void release(int p) throws Exception {
            if (sems != null) {
                Collection<Lease> l = leases[p];
                leases[p] = null;
                if (l == null) {
                    throw new IllegalStateException("no leases held");
                }
                sems[p].returnAll(l);
            } else if (rwLocks[p] != null) {
                InterProcessLock l = rwHeld[p];
                rwHeld[p] = null;
                if (l == null) {
                    throw new IllegalStateException("no read/write lock held");
                }
                l.release();
            } else {
                mutexes[p].release();
            }
        }

        void releaseAll() throws Exception {
            for (int p = 0; p < mutexes.length; p++) {
                if (mutexes[p] != null) {
                    while (mutexes[p].isOwnedByCurrentThread()) {
                        mutexes[p].release();
                    }
                } else if (rwHeld[p] != null || leases[p] != null) {
                    release(p);
                }
            }
        }
    }

    static void serve(String[] a, boolean rw, boolean revocable, int nLeases) throws Exception {
        String servers = a[1];
        int sessionMillis = Integer.parseInt(a[2]);
        int threads = Integer.parseInt(a[3]);
        String[] paths = Arrays.copyOfRange(a, 4, a.length);
        CuratorFramework c = connect(servers, sessionMillis);
        InterProcessSemaphoreV2[] sems = null;
        if (nLeases > 0) {
            sems = new InterProcessSemaphoreV2[paths.length];
            for (int p = 0; p < paths.length; p++) {
                sems[p] = new InterProcessSemaphoreV2(c, paths[p], nLeases);
            }
        }
        final InterProcessSemaphoreV2[] shared = sems;
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.US_ASCII);
        @SuppressWarnings("unchecked")
        BlockingQueue<String[]>[] queues = new BlockingQueue[threads];
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int id = t;
            queues[t] = new LinkedBlockingQueue<>();
            ts[t] = new Thread(() -> {
                Held held = new Held(c, paths, rw, shared);
                if (revocable && held.mutexes[0] != null) {
                    for (int p = 0; p < paths.length; p++) {
                        final String tp = id + " " + p;
                        // The listener runs on a Curator thread, but only
                        // the owning thread may release: it tells the
                        // thread through its queue.
                        held.listeners[p] = (m -> {
                            synchronized (out) {
                                out.println("V " + tp);
                                out.flush();
                            }
                            queues[id].add(("Y " + tp).split(" "));
                        });
                    }
                }
                try {
                    while (true) {
                        String[] cmd = queues[id].take();
                        if (cmd.length == 0) {
                            held.releaseAll();
                            return;
                        }
                        String reply;
                        if (cmd[0].equals("K")) {
                            try {
                                Revoker.attemptRevoke(c, cmd[2]);
                                reply = "K " + id;
                            } catch (Exception e) {
                                reply = "F " + id + " " + String.valueOf(e).replace('\n', ' ');
                            }
                            synchronized (out) {
                                out.println(reply);
                                out.flush();
                            }
                            continue;
                        }
                        int p = Integer.parseInt(cmd[2]);
                        if (cmd[0].equals("Y")) {
                            boolean owned = held.mutexes[p].isOwnedByCurrentThread();
                            if (owned) {
                                held.mutexes[p].release();
                            }
                            synchronized (out) {
                                out.println((owned ? "Y " : "N ") + id + " " + p);
                                out.flush();
                            }
                            continue;
                        }
                        try {
                            if (cmd[0].equals("A")) {
                                reply = "H " + id + " " + held.acquire(p, cmd);
                            } else {
                                held.release(p);
                                reply = "U " + id;
                            }
                        } catch (Exception e) {
                            reply = "F " + id + " " + String.valueOf(e).replace('\n', ' ');
                        }
                        synchronized (out) {
                            out.println(reply);
                            out.flush();
                        }
                    }
                } catch (Exception e) {
                    e.printStackTrace();
                }
            });
            ts[t].start();
        }
        synchronized (out) {
            out.println("ready");
            out.flush();
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        for (String line; (line = in.readLine()) != null; ) {
            String[] cmd = line.trim().split(" ");
            if (cmd.length != 3 && cmd.length != 4) {
                continue;
            }
            int t = Integer.parseInt(cmd[1]);
            if (t >= 0 && t < threads) {
                queues[t].add(cmd);
            }
        }
        for (BlockingQueue<String[]> q : queues) {
            q.add(new String[0]);
        }
        // Threads still blocked in an acquisition get 10s in all, not each.
        long deadline = System.currentTimeMillis() + 10000;
        for (Thread t : ts) {
            t.join(Math.max(1, deadline - System.currentTimeMillis()));
        }
        c.close();
        System.exit(0);
    }
}

// Package zkserver starts and controls real Apache ZooKeeper servers for the
// tests and the stress command of tierlock (the examples start none: they
// take -zk, and import no internal package).
//
// It runs Debian's ZooKeeper 3.8 (the "zookeeper" package:
// /usr/share/java/zookeeper.jar and a java binary) on 127.0.0.1 and free
// ports, either standalone or as an ensemble of three or more members, each
// with its own data directory under a temporary directory. Members can be
// stopped, SIGKILLed and restarted with their data kept, and the package can
// tell which member leads and read the server counters (mntr) and the
// processor time that tests and benchmarks use to report ZooKeeper requests
// and server CPU per lock acquisition.
//
// Setting the environment variable TIERLOCK_ZK_SERVERS to a comma-separated
// list of host:port addresses makes [FromEnv] return a [Cluster] that points
// at that existing server or ensemble instead: nothing is started, and
// operations that need control of the processes return [ErrExternal].
//
// Servers started here are put in their own process group and receive SIGKILL
// when the process that started them dies (Linux parent-death signal), so a
// test binary that fails or panics leaves no server behind.
//
// With [WithPeerProxies] every server-to-server connection of an ensemble
// passes a fault proxy (internal/faultproxy) that the caller controls, so
// that [Cluster.PartitionMember] can cut one member from its peers while its
// clients stay connected to it, as across a network partition; with
// [WithSyncLimit] and [WithTickTime] a test sets how long a follower so cut
// goes on serving.
//
// With [WithTLS] every member also serves a secure client port
// ([Cluster.SecureAddr]) with a certificate from a throwaway [CA] the
// test makes, which also issues the clients' certificates: ZooKeeper's
// x509 provider makes a client certificate the connection's identity in
// ACLs.
//
// The files follow the jobs:
//
//   - launch.go: options, the configuration written for each member,
//     Start and StartEnsemble, readiness;
//   - addrs.go: the members' ports and addresses;
//   - tls.go: the throwaway CA and the secure client port;
//   - peers.go: the peer proxies of an ensemble started WithPeerProxies;
//   - control.go: stopping, killing and restarting members, partitioning
//     one from its peers and healing it, Close;
//   - fourletter.go: the four-letter words (srvr, mntr, conf, ...) and what
//     is read from them (Mode, Leader, Counters);
//   - usage.go: what the servers use and allow: processor time (CPU, read
//     from /proc through proc_linux.go) and the session timeouts they grant
//     (by default 2 ticks to a minute, so that a 10s session asked for is
//     granted);
//   - resolve.go: servers named by TIERLOCK_ZK_SERVERS or a flag (FromEnv,
//     Resolve).
//
// It depends on the standard library, go-zookeeper (for the session probe)
// and internal/faultproxy only, and is internal to the module.
package zkserver

// Package faultproxy is a fault-injecting TCP proxy for tests.
//
// A Proxy listens on the loopback interface and forwards every accepted
// connection to a target address, normally a ZooKeeper server. Clients dial
// [Proxy.Addr] instead of the server, and the test (or the stress command run
// with -fault) injects network faults through the proxy:
//
//   - [Proxy.DropAll] closes every open connection on both sides;
//   - [Proxy.Partition] drops everything and refuses new connections for a
//     while, until [Proxy.Heal];
//   - [Proxy.Pause] holds all bytes while keeping connections open, so a
//     client's receive timeout fires and its session expires on the server
//     although the client process lives on; [Proxy.Resume] releases them;
//   - [Proxy.SetLatency] delays every forwarded chunk without reordering;
//   - [Proxy.DropAfter] drops all connections right after a given number of
//     bytes were forwarded towards the server, e.g. after a request was sent
//     but before its reply arrives;
//   - [Proxy.Reset] and [Proxy.ResetAfter] do the same with a TCP reset
//     (SO_LINGER 0), so that the client sees ECONNRESET or EPIPE instead of
//     an end of stream;
//   - [Proxy.Stall] blocks the clients' writes (nothing is read from them,
//     so their send buffers fill) while the server's bytes keep flowing,
//     until [Proxy.Unstall];
//   - [Proxy.StallReplies] is Stall the other way, and with Stall holds a
//     link both ways, each released on its own ([Proxy.UnstallReplies]);
//   - [Proxy.BlockUpstream] is an asymmetric partition: the clients' bytes
//     are thrown away, the server's still arrive, until
//     [Proxy.UnblockUpstream];
//   - [Proxy.Blackhole] is a silent partition: nothing crosses the open
//     connections in either direction, not even a close, and new ones are
//     refused, until [Proxy.Heal]. Put one in front of every
//     server-to-server port and a ZooKeeper member can be cut from its peers
//     while its clients stay connected (see internal/zkserver).
//
// [Proxy.SetTarget] redirects new connections, for a server restarted on
// another port. The proxy only listens on loopback addresses; it is a test
// tool, not a production component.
package faultproxy

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
//     but before its reply arrives.
//
// [Proxy.SetTarget] redirects new connections, for a server restarted on
// another port. The proxy only listens on loopback addresses; it is a test
// tool, not a production component.
package faultproxy

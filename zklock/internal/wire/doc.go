// Package wire is zklock's ground floor: the connections its sessions
// dial, tapped. A Tap sees each request go-zookeeper writes, so that the
// session above can pipeline a request behind one already on the wire
// (Expect, Forget, Waiter.Sent) and date the proofs of its lease (Mark,
// FirstWriteAfter); it also reads the session timeout the server granted
// (GrantedTimeout) and batches the writes of a busy session into one
// system call (conn.go). It sends requests of its own among
// go-zookeeper's, with xids of its own, and takes their answers out of the
// stream before go-zookeeper reads it (call.go: Call; multiread.go: the
// locks' listings as one multiRead, which go-zookeeper v1.0.4 cannot
// send); the socket still has one writer at a time (conn.go's queue).
// Those requests keep the order every new connection keeps (order.go):
// the connect answer, go-zookeeper's re-sent credentials answered, its
// setWatches when it holds watches (zkwatches.go keeps its record of
// them), then the tap's own.
// Two things of the connection go-zookeeper v1.0.4
// lacks are done here, where every request of the session passes: a
// chroot (chroot.go, frames.go: request paths prefixed, reply and
// event paths stripped), and TLS on the dialed socket, below the tap, with
// the servers' names kept for the certificates and refusals told at once
// (tls.go: HostProvider, Refused). A server that takes a connection and
// never answers its connect request is given up, and told of, at two
// thirds of the session timeout asked, where go-zookeeper waits ten times
// that (handshake.go: UnansweredError, Unanswered). The session never
// reaches into its fields: these verbs, and Handed and Answered around
// each request, are the floor's whole face.
package wire

// Package wire is zklock's ground floor: the connections its sessions
// dial, tapped. A Tap sees each request go-zookeeper writes, so that the
// session above can pipeline a request behind one already on the wire
// (Expect, Forget, Waiter.Sent) and date the proofs of its lease (Mark,
// FirstWriteAfter); it also reads the session timeout the server granted
// (GrantedTimeout) and batches the writes of a busy session into one
// system call (conn.go). The session never reaches into its fields: these
// verbs, and Handed and Answered around each request, are the floor's
// whole face.
package wire

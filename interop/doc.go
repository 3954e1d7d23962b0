// Package interop holds tierlock's mixed-fleet tests: tierlock processes
// (strict and with hand-off), go-zookeeper's zk.Lock, the zkcompat drop-in,
// Apache Curator's InterProcessMutex (Java) and kazoo's Lock (Python) take
// turns on one ZooKeeper lock path while each holder appends enter and exit
// records to one O_APPEND file, and an independent checker proves that no
// two holds overlapped. The peers are the real libraries, as Debian packages
// them (scripts/install-deps.sh installs them); see internal/peers.
//
// The package has no API: it is its tests.
package interop

module github.com/tierlock/tierlock

go 1.25.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/go-zookeeper/zk v1.0.4
	go.uber.org/goleak v1.3.0
)

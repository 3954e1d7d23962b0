module github.com/tierlock/tierlock/cronlock

go 1.26.0

require (
	github.com/robfig/cron/v3 v3.0.1
	github.com/tierlock/tierlock v0.0.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/go-zookeeper/zk v1.0.4 // indirect
)

replace github.com/tierlock/tierlock => ../

module github.com/tierlock/tierlock/gocronlock

go 1.25.0

require (
	github.com/go-co-op/gocron/v2 v2.21.2
	github.com/go-zookeeper/zk v1.0.4
	github.com/google/uuid v1.6.0
	github.com/jonboulle/clockwork v0.5.0
	github.com/tierlock/tierlock v0.0.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
)

replace github.com/tierlock/tierlock => ../

# tierlock: the two commands README gives, and a few helpers.
.PHONY: test demo bench deps

# Install ZooKeeper if missing, then gofmt, vet and every test with -race.
test:
	scripts/test.sh

# Install ZooKeeper if missing, start it, run the stress comparison.
demo:
	scripts/demo.sh

# Side-by-side benchmarks (see README for benchstat use).
bench: deps
	go test -run '^$$' -bench . -count 5 ./zklock ./tier ./mutexbool

deps:
	scripts/install-deps.sh

# A throwaway ZooKeeper on 127.0.0.1:2181 (ZK_PORT=2182 make zk for another
# port), in the background; make zk-stop stops it (see scripts/zk.sh).
.PHONY: zk zk-stop zk-status
ZK_PORT ?= 2181
zk:
	scripts/zk.sh start -p $(ZK_PORT)

zk-stop:
	scripts/zk.sh stop -p $(ZK_PORT)

zk-status:
	scripts/zk.sh status -p $(ZK_PORT)

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

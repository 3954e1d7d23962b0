// docs/bench holds raw benchmark output (JSON, HTML reports, long logs),
// the record behind docs/benchmarks.md. This go.mod makes the directory a
// module of its own, which cmd/go leaves out of the zip of
// github.com/tierlock/tierlock that go get downloads; the files stay in
// the repository, under the names docs and notes cite. It holds no Go
// code and is never tagged.
module github.com/tierlock/tierlock/docs/bench

go 1.26.0

package writes_test

import (
	"strings"

	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// Names for the explorer's log and reports.

func keys(rs []*rec) string {
	var s []string
	for _, r := range rs {
		s = append(s, short(r.key))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// describe names a request's writes, for the log.
func describe(r *writes.Request) string {
	var s []string
	for _, w := range r.Writes {
		ops := w.Ops()
		k := "txn"
		switch w.Kind() {
		case writes.Create:
			k = "create"
		case writes.Delete:
			k = "delete"
		}
		s = append(s, k+" "+short(writes.OpPath(ops[len(ops)-1])))
	}
	if r.Single {
		return s[0]
	}
	return "multi[" + strings.Join(s, ", ") + "]"
}

func describeAll(reqs []*writes.Request) string {
	var s []string
	for _, r := range reqs {
		s = append(s, describe(r))
	}
	return strings.Join(s, "; ")
}

// short drops the GUID's middle from a node name, for the log.
func short(p string) string {
	if i := strings.Index(p, "_c_"); i >= 0 && len(p) >= i+3+36 {
		return p[:i+3] + p[i+3:i+11] + p[i+3+36:]
	}
	return p
}

package fault

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseFaults(t *testing.T) {
	for _, tc := range []struct {
		v        string
		external bool
		want     string
	}{
		{"none", false, ""},
		{"all", false, "restart,leader,expire,drop,kill,partition,reset,flood,stall,pause,close"},
		{"all", true, "expire,drop,kill,reset,flood,stall,pause,close"}, // servers given: nothing to kill or cut
		{"kill, drop,kill", true, "kill,drop"},
	} {
		got, err := Parse(tc.v, tc.external)
		var names []string
		for _, k := range got {
			names = append(names, string(k))
		}
		if err != nil || strings.Join(names, ",") != tc.want {
			t.Errorf("Parse(%q, %v) = %q, %v; want %q", tc.v, tc.external, got, err, tc.want)
		}
	}
	if _, err := Parse("restart", true); err == nil {
		t.Error("restart of servers stress did not start: no error")
	}
	if _, err := Parse("partition", true); err == nil {
		t.Error("partition of servers stress did not start: no error")
	}
}

package nemesis

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/linear"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A scene's two holds pass Porcupine's check when A was told before B's
// grant and B's token is above A's, and fail otherwise.
func TestSceneHistory(t *testing.T) {
	start := time.Now()
	ms := func(n int) time.Time { return start.Add(time.Duration(n) * time.Millisecond) }
	for _, c := range []struct {
		name          string
		told, granted time.Time
		tokenB        int64
		want          string // "" passes
	}{
		{"told before the grant", ms(10), ms(20), 8, ""},
		{"granted before A was told", ms(30), ms(20), 8, "held by proc 0 goroutine 0"},
		{"never told", time.Time{}, ms(20), 8, "held by proc 0 goroutine 0"},
		{"B's token not above A's", ms(10), ms(20), 7, "token 7 granted again"},
	} {
		holds := sceneHolds(start, 7, c.told, c.granted, c.tokenB, ms(40))
		p := linear.Check(linear.History{Holds: holds}, linear.Options{Tokens: true})
		t.Logf("%s: %v", c.name, p)
		switch {
		case c.want == "" && !p.OK():
			t.Errorf("%s: %v", c.name, p)
		case c.want != "" && (p.OK() || !strings.Contains(p.Violation.Reason, c.want)):
			t.Errorf("%s: %v, want a failure with %q", c.name, p, c.want)
		}
	}
}

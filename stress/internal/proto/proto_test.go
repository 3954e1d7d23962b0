package proto

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSplitQuota(t *testing.T) {
	q := SplitQuota(10, 2, 3)
	var sum int64
	for _, proc := range q {
		for _, n := range proc {
			if n < 1 || n > 2 {
				t.Errorf("quota %d", n)
			}
			sum += n
		}
	}
	if sum != 10 {
		t.Errorf("quotas add up to %d, want 10", sum)
	}
	task := Task{Proc: 1, Procs: 2, Goroutines: 3, Acquisitions: 10, PathBase: "/a", NPaths: 2}
	task.Derive()
	if len(task.Quota) != 3 || task.Paths[1] != "/a/lock-1" {
		t.Errorf("derived %v %v", task.Quota, task.Paths)
	}
}

package child

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain: the test binary is also the children of these tests.
func TestMain(m *testing.M) {
	Dispatch(map[string]func() int{"echo": echoMain, "fail": func() int { return 7 }})
	goleak.VerifyTestMain(m)
}

type echoTask struct{ Prefix string }

// echoMain prints "ready", then echoes every line of stdin with the task's
// prefix until "exit" or EOF.
func echoMain() int {
	var task echoTask
	if err := Task(&task); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() && sc.Text() != "exit" {
		fmt.Println(task.Prefix + sc.Text())
	}
	fmt.Fprintln(os.Stderr, "echo done")
	return 0
}

func start(t *testing.T, role string, task any) *Proc {
	t.Helper()
	p, err := Start(Spec{Role: role, Task: task, Args: []string{"-test.run=^$"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill(); _ = p.Wait() })
	return p
}

func line(t *testing.T, p *Proc) string {
	t.Helper()
	select {
	case l, ok := <-p.Lines():
		if !ok {
			t.Fatalf("child ended: %s", p.Describe("child"))
		}
		return string(l)
	case <-time.After(30 * time.Second):
		t.Fatal("no line from the child within 30s")
	}
	return ""
}

func TestRoundTrip(t *testing.T) {
	p := start(t, "echo", echoTask{Prefix: "> "})
	if l := line(t, p); l != "ready" {
		t.Fatalf("first line %q", l)
	}
	p.Send("hello")
	if l := line(t, p); l != "> hello" {
		t.Fatalf("echo %q", l)
	}
	p.Send("exit")
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if d := p.Describe("echo"); !strings.Contains(d, "echo exited") || !strings.Contains(d, "echo done") {
		t.Errorf("describe: %q", d)
	}
}

func TestExitStatus(t *testing.T) {
	p := start(t, "fail", nil)
	var ee *exec.ExitError
	if err := p.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("exit: %v", err)
	}
}

func TestKillAndReplace(t *testing.T) {
	p := start(t, "echo", echoTask{Prefix: "1 "})
	line(t, p)
	p.Kill()
	err := p.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("killed child: %v", err)
	}
	q, err := p.Replace(echoTask{Prefix: "2 "})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Kill(); _ = q.Wait() })
	if q.Pid() == p.Pid() {
		t.Fatal("same pid")
	}
	line(t, q)
	q.Send("x")
	if l := line(t, q); l != "2 x" {
		t.Fatalf("replacement said %q", l)
	}
	if err := q.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if err := q.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestNotAChild(t *testing.T) {
	if Role() != "" {
		t.Fatalf("role %q in the parent", Role())
	}
	var v echoTask
	if err := Task(&v); err == nil {
		t.Fatal("Task in the parent: no error")
	}
}

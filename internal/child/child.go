// Package child re-executes the current binary as a child process with a
// role and a task: the pattern of a command whose workers are itself (the
// stress command) and of tests that need several processes (a test binary
// starts itself again, and its TestMain turns into the child).
//
// The parent starts a child with [Start], giving a role (which function
// the child runs) and a task (any value, passed as JSON in the child's
// environment). It writes commands to the child's stdin with [Proc.Send],
// reads the child's stdout line by line from [Proc.Lines], keeps the end of
// its stderr for [Proc.Describe], and can [Proc.Kill] it and start another
// in its place with [Proc.Replace]. On Linux a child is killed when its
// parent dies, so an interrupted run leaves none behind.
//
// The child side is one call at the top of main or TestMain:
//
//	func TestMain(m *testing.M) {
//		child.Dispatch(map[string]func() int{"worker": workerMain})
//		goleak.VerifyTestMain(m)
//	}
//
// Dispatch returns at once in a parent; in a child it runs the role's
// function and exits with its status. The function reads its task with
// [Task], its commands from os.Stdin, and writes its messages to
// os.Stdout.
package child

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// The environment variables that make a process a child: its role, and
// its task as JSON.
const (
	RoleEnv = "TIERLOCK_CHILD_ROLE"
	TaskEnv = "TIERLOCK_CHILD_TASK"
)

// Role returns the role this process was started in by [Start]; "" when
// it was not started as a child.
func Role() string { return os.Getenv(RoleEnv) }

// Task decodes this child's task into v.
func Task(v any) error {
	t, ok := os.LookupEnv(TaskEnv)
	if !ok {
		return errors.New("child: not started as a child: no " + TaskEnv)
	}
	if err := json.Unmarshal([]byte(t), v); err != nil {
		return fmt.Errorf("child: bad %s: %w", TaskEnv, err)
	}
	return nil
}

// Dispatch runs the function of this process's role and exits with the
// status it returns, when this process is a child whose role is in mains.
// Otherwise it returns: in a parent, or in a child of a role that another
// call handles.
func Dispatch(mains map[string]func() int) {
	if main, ok := mains[Role()]; ok && Role() != "" {
		os.Exit(main())
	}
}

// environ is the parent's environment without any child variables of its
// own (a child that starts children gives them their own role), plus the
// child's.
func environ(role string, task []byte) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, RoleEnv+"=") && !strings.HasPrefix(kv, TaskEnv+"=") {
			env = append(env, kv)
		}
	}
	return append(env, RoleEnv+"="+role, TaskEnv+"="+string(task))
}

package replay

import (
	"fmt"
	"path"
	"strings"

	"github.com/tierlock/tierlock/internal/trace"
)

// Violation is a recorded step that the model does not allow from the
// state the earlier steps led to (or, for the checks across processes, a
// step that breaks what the model asserts of all of them).
type Violation struct {
	File  string     // the trace file
	Step  trace.Step // the step refused: its Seq, Kind, Pid and Proc name it
	Rule  string     // why: the model's guard or assertion it fails
	State string     // the process's model state before the step
	Other string     // checks across processes: the other step involved
	at    int64      // the step's time on the merged clock, for ordering
}

// Error words the violation as the replay reports it.
func (v *Violation) Error() string {
	s := fmt.Sprintf("%s: step %d (%s", v.File, v.Step.Seq, v.Step.Kind)
	if v.Step.Op != "" {
		s += " " + string(v.Step.Op)
	}
	s += fmt.Sprintf(") of process %d/%d: %s", v.Step.Pid, v.Step.Proc, v.Rule)
	if v.Other != "" {
		s += "; other: " + v.Other
	}
	if v.State != "" {
		s += "; model state: " + v.State
	}
	return s + "; step: " + v.Step.String()
}

// refuse is a transition's answer when the model has no such step: its
// rule says which guard or assertion of twotier.pml fails.
type refuse string

func (r refuse) Error() string { return string(r) }

func refusef(format string, args ...any) error { return refuse(fmt.Sprintf(format, args...)) }

// isNode reports whether p names a lock node (its sequence number ends
// it) rather than a create's prefix, which ends with the marker.
func isNode(p string) bool {
	return p != "" && p[len(p)-1] >= '0' && p[len(p)-1] <= '9'
}

// prefixOf is a node's name without its sequence number: the prefix of
// the create that made it, GUID included (protection mode looks for it).
func prefixOf(node string) string {
	return strings.TrimRightFunc(node, func(r rune) bool { return r >= '0' && r <= '9' })
}

// lockOf is the lock path of a node or of a create's prefix.
func lockOf(p string) string { return path.Dir(p) }

// stepNode is the node a step names: Node, or for a send (which has no
// Node) the path it went to.
func stepNode(s trace.Step) string {
	if s.Node != "" {
		return s.Node
	}
	return s.Path
}

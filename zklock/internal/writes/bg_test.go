package writes_test

import (
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"
)

// bgJob is a delete the write path handed over (Conn.DeleteApart) or a
// create's sweep (protection mode's search for an abandoned GUID): tried
// while the session is up until its node or its session is gone.
type bgJob struct {
	node, sweepPath, sweepPrefix string
	owner                        int64
	done                         bool
}

func (w *world) bgReady(j *bgJob) bool {
	return !j.done && w.state == connUp
}

func (w *world) bgStep(j *bgJob) {
	if j.owner != 0 && j.owner != w.sid {
		j.done = true // its session is over, and its nodes with it
		return
	}
	node := j.node
	if j.sweepPrefix != "" {
		node = ""
		kids, _, _ := w.tree.Children(j.sweepPath)
		for _, k := range kids {
			if strings.HasPrefix(j.sweepPath+"/"+k, j.sweepPrefix) {
				node = j.sweepPath + "/" + k
			}
		}
		if node == "" {
			j.done = true
			return
		}
	}
	err := w.tree.Delete(w.sid, node, -1)
	j.done = err == nil || errors.Is(err, zk.ErrNoNode)
	w.logf("background delete %s: %v", short(node), err)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

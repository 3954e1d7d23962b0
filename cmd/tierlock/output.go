package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/tierlock/tierlock/zklock"
)

// nodeView is one queue node as printed: the JSON form of -json, and the
// columns of the human form.
type nodeView struct {
	Node    string        `json:"node"` // full path
	Seq     int32         `json:"seq"`
	Kind    string        `json:"kind"`   // mutex, read, write, lease
	Family  zklock.Family `json:"family"` // the recipe's node family (zklock.Family)
	Holder  bool          `json:"holder"`
	Session string        `json:"session"` // ephemeralOwner, hex as ZooKeeper's logs and four-letter words print it
	Ctime   time.Time     `json:"ctime"`
	AgeSec  float64       `json:"age_seconds"` // local clock minus the server's ctime: since it queued
	Host    string        `json:"host,omitempty"`
	Pid     int           `json:"pid,omitempty"`
	Label   string        `json:"label,omitempty"`
	Revoke  bool          `json:"revoke_requested,omitempty"` // the data is Curator's __REVOKE__
	Data    string        `json:"data"`                       // the raw data (lossy for binary data)
	// Connected: the session is connected to some server (ls, where every
	// server's cons says; nil when unknown). A process gone keeps its
	// nodes until its session expires.
	Connected *bool `json:"session_connected,omitempty"`

	// The first holder only (see holding.go): how long it has led the
	// queue, at least (exactly when HeldExact; nil when ZooKeeper does not
	// show it), and its fencing token, at least (exactly when TokenExact;
	// 0 when unknown): the zxid Hold.Token returns.
	HeldSec    *float64 `json:"held_seconds,omitempty"`
	HeldExact  bool     `json:"held_exact,omitempty"`
	Token      int64    `json:"token,omitempty"`
	TokenExact bool     `json:"token_exact,omitempty"`
}

// queueView is one lock path and its queue.
type queueView struct {
	Path  string     `json:"path"`
	Time  *time.Time `json:"time,omitempty"` // watch only: when the listing was read
	Nodes []nodeView `json:"nodes"`
}

// kindOf names what a node of family f holds or waits for.
func kindOf(f zklock.Family) string {
	switch f {
	case zklock.FamilyCuratorRead, zklock.FamilyKazooRead:
		return "read"
	case zklock.FamilyCuratorWrite:
		return "write"
	case zklock.FamilyLease:
		return "lease"
	}
	return "mutex" // tierlock, Curator, zk.Lock, kazoo Lock and WriteLock
}

// revokeMessage is Curator's revocation request, written into a holder's
// node data by a revoker (zklock.RevokeMessage).
const revokeMessage = zklock.RevokeMessage

// viewOf is the view of a listing ps of lockPath, taken at now; st, the
// stats read after it, bounds its first holder's time and token (the zero
// queueStat: unknown).
func viewOf(lockPath string, ps []zklock.Participant, st queueStat, now time.Time) queueView {
	q := queueView{Path: lockPath, Nodes: make([]nodeView, 0, len(ps))}
	for i, p := range ps {
		v := nodeView{
			Node: lockPath + "/" + p.Node, Seq: p.Sequence, Kind: kindOf(p.Family), Family: p.Family,
			Holder: p.Holder, Session: fmt.Sprintf("0x%x", p.Owner), Ctime: p.Created.UTC(),
			AgeSec: seconds(now.Sub(p.Created)), Data: string(p.Data),
		}
		if i == 0 && p.Holder {
			st.holding(&v, ps[len(ps)-1], now)
		}
		var d struct {
			Host  string `json:"host"`
			Pid   int    `json:"pid"`
			Label string `json:"label"`
		}
		switch {
		case string(p.Data) == revokeMessage:
			v.Revoke = true
		case json.Unmarshal(p.Data, &d) == nil && (d.Host != "" || d.Pid != 0):
			v.Host, v.Pid, v.Label = d.Host, d.Pid, d.Label
		}
		q.Nodes = append(q.Nodes, v)
	}
	return q
}

// who is the human form of a node's data.
func (v nodeView) who() string {
	switch {
	case v.Revoke:
		return "revocation requested (" + revokeMessage + ")"
	case v.Host != "" || v.Pid != 0:
		s := "host=" + v.Host + " pid=" + strconv.Itoa(v.Pid)
		if v.Label != "" {
			s += " label=" + strconv.Quote(v.Label)
		}
		return s
	case v.Data == "":
		return "-"
	case !utf8.ValidString(v.Data):
		return fmt.Sprintf("(%d bytes)", len(v.Data))
	}
	s := v.Data
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return strconv.Quote(s)
}

// printQueues writes queues in the human form: a heading per lock path,
// with how long the first holder has led the queue and its token (as in
// ls's table of a root), then a table of its nodes, holders first, each
// with how long ago it queued.
func printQueues(w io.Writer, qs []queueView) error {
	for i, q := range qs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		heading := q.Path
		if q.Time != nil {
			heading = q.Time.Format("15:04:05.000") + " " + heading
		}
		heading += "  (" + plural(len(q.Nodes), "node") + ")"
		if len(q.Nodes) > 0 && q.Nodes[0].Holder {
			h := &q.Nodes[0]
			heading += "  held " + h.heldText() + "  token " + h.tokenText()
		}
		fmt.Fprintln(w, heading)
		if len(q.Nodes) == 0 {
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  STATE\tKIND\tFAMILY\tSEQ\tQUEUED\tSESSION\tNODE\tOWNER")
		for _, v := range q.Nodes {
			state := "waits"
			if v.Holder {
				state = "holds"
			}
			name := v.Node[strings.LastIndex(v.Node, "/")+1:]
			session := v.Session
			if v.disconnected() {
				session += " (no connection)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%010d\t%s\t%s\t%s\t%s\n", state, v.Kind, v.Family, v.Seq,
				age(v.AgeSec), session, name, v.who())
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func age(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d < 0:
		return "0s" // the server's clock is ahead of ours
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// printJSON writes v as one line of JSON.
func printJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

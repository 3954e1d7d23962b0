package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// A root of locks (a registry's root, a directory of lock paths) as ls and
// watch show it: one line per lock, and a total.

// lockSummary is one lock path in one line: who holds it, since when,
// with which token, how many processes wait. Its JSON keeps "path" and
// "nodes" of queueView, so that a script written for ls -json's per-node
// form reads it unchanged.
type lockSummary struct {
	Path    string     `json:"path"`
	Name    string     `json:"name"`   // the path relative to the root
	Family  string     `json:"family"` // the families of its nodes, in queue order, comma-separated
	Holders int        `json:"holders"`
	Waiting int        `json:"waiting"`          // sessions with a node that does not hold: the processes waiting
	Holder  *nodeView  `json:"holder,omitempty"` // the first holder, with held_seconds and token
	AgeSec  float64    `json:"age_seconds"`      // the first holder's node's age: since it queued, its wait included
	Nodes   []nodeView `json:"nodes"`

	// waiters are the sessions of its waiting nodes: a process, one
	// session, counted once however many nodes it queued (zk.Lock queues
	// one per goroutine), here and over the root (sum).
	waiters []string
}

// totals sums up the locks under a root.
type totals struct {
	Locks   int `json:"locks"`
	Held    int `json:"held"`    // locks with a holder
	Waiting int `json:"waiting"` // sessions with a node waiting, over all locks: a process waiting on two locks counts once
}

func (t totals) String() string {
	procs := "processes"
	if t.Waiting == 1 {
		procs = "process"
	}
	return fmt.Sprintf("%s, %d held, %d %s waiting", plural(t.Locks, "lock"), t.Held, t.Waiting, procs)
}

// relName names lockPath relative to root ("/" keeps the whole path; the
// root itself, when it is a lock too, is ".").
func relName(root, lockPath string) string {
	switch {
	case root == "/":
		return lockPath
	case lockPath == root:
		return "."
	}
	return strings.TrimPrefix(lockPath, root+"/")
}

func summarize(root string, q queueView) lockSummary {
	s := lockSummary{Path: q.Path, Name: relName(root, q.Path), Nodes: q.Nodes}
	var fams []string
	for i := range q.Nodes {
		v := &q.Nodes[i]
		if !slices.Contains(fams, string(v.Family)) {
			fams = append(fams, string(v.Family))
		}
		if !v.Holder {
			if !slices.Contains(s.waiters, v.Session) {
				s.waiters = append(s.waiters, v.Session)
			}
			s.Waiting = len(s.waiters)
			continue
		}
		if s.Holders++; s.Holder == nil {
			s.Holder, s.AgeSec = v, v.AgeSec
		}
	}
	s.Family = strings.Join(fams, ",")
	return s
}

func sum(ls []lockSummary) totals {
	t := totals{Locks: len(ls)}
	waiting := map[string]bool{}
	for _, l := range ls {
		if l.Holders > 0 {
			t.Held++
		}
		for _, w := range l.waiters {
			waiting[w] = true
		}
	}
	t.Waiting = len(waiting)
	return t
}

// holderText is the HOLDER column: pid@host and the label from the
// node's data, short enough to keep the label on a line of watch; else
// the holder's node, with its data when it has any (Curator writes an IP
// address, kazoo its identifier).
func (s lockSummary) holderText() string {
	h := s.Holder
	if h == nil {
		return "-"
	}
	name := h.Node[strings.LastIndex(h.Node, "/")+1:]
	var t string
	switch {
	case h.Host != "" || h.Pid != 0:
		t = strconv.Itoa(h.Pid) + "@" + h.Host // as Java names a process
		if h.Label != "" {
			t += " " + strconv.Quote(h.Label)
		}
	case h.Revoke:
		t = name + " (revocation requested)"
	case h.Data == "":
		t = name
	default:
		t = name + " " + h.who()
	}
	if s.Holders > 1 {
		t += fmt.Sprintf(" (+%d more)", s.Holders-1)
	}
	if h.disconnected() {
		t = noConnection + t
	}
	return t
}

// queuedText is the QUEUED column: how long ago the holder queued.
func (s lockSummary) queuedText() string {
	if s.Holder == nil {
		return "-"
	}
	return age(s.AgeSec)
}

// cells are the columns of the table of a root (summaryHeader).
func (s lockSummary) cells() []string {
	return []string{s.Name, s.Family, s.Holder.heldText(), s.queuedText(), s.Holder.tokenText(),
		fmt.Sprint(s.Waiting), s.holderText()}
}

var summaryHeader = []string{"LOCK", "FAMILY", "HELD", "QUEUED", "TOKEN", "WAITING-PROCS", "HOLDER"}

// legend says what the columns of the table of a root do and do not
// show; it follows the table, the total stays the last line.
const legend = `HELD           since the holder took over (≥ at least; ? not in ZooKeeper: at most QUEUED, since it queued)
TOKEN          its fencing token, as Hold.Token returns it (≥ at least: its node's czxid)
WAITING-PROCS  processes (sessions) queued behind it; goroutines waiting inside a process are not in ZooKeeper
`

// maxWidth bounds the lines of the table of a root: the HOLDER column is
// cut short to fit (ls -l and -json show all of it).
const maxWidth = 120

// printSummaries writes ls's view of a root: a table, one line per lock,
// the legend, then the total.
func printSummaries(w io.Writer, ls []lockSummary) error {
	t := &table{w: w, max: maxWidth}
	rows := [][]string{summaryHeader}
	for _, l := range ls {
		rows = append(rows, l.cells())
	}
	if err := t.rows(rows...); err != nil {
		return err
	}
	more := ""
	if slices.ContainsFunc(ls, func(l lockSummary) bool { return l.Holder.disconnected() }) {
		more = legendNoConnection
	}
	_, err := fmt.Fprint(w, legend, more, sum(ls), "\n")
	return err
}

// table writes rows of aligned columns, the last column unpadded. Unlike
// text/tabwriter it can go on writing rows later (watch's rows, one per
// change) in the widths the first rows set, widening a column when a
// later cell needs it. With max set, a last cell that would end a line
// past max columns is cut short, to no fewer than minLast columns.
type table struct {
	w      io.Writer
	widths []int
	max    int
}

// minLast is the fewest columns max leaves the last cell.
const minLast = 16

func (t *table) rows(rows ...[]string) error {
	for _, r := range rows {
		for i, c := range r[:len(r)-1] {
			if i >= len(t.widths) {
				t.widths = append(t.widths, 0)
			}
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		col := 0
		for i, c := range r[:len(r)-1] {
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(c)+2))
			col += t.widths[i] + 2
		}
		b.WriteString(t.cut(r[len(r)-1], col))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(t.w, b.String())
	return err
}

// cut shortens c, the last cell of a row starting at column col, to end
// by column t.max, an ellipsis marking the cut.
func (t *table) cut(c string, col int) string {
	room := max(t.max-col, minLast)
	if t.max == 0 || utf8.RuneCountInString(c) <= room {
		return c
	}
	r := []rune(c)
	return string(r[:room-1]) + "…"
}

// summaries summarizes the queues of the lock paths under root.
func summaries(root string, qs []queueView) []lockSummary {
	out := make([]lockSummary, 0, len(qs))
	for _, q := range qs {
		out = append(out, summarize(root, q))
	}
	return out
}

// timeText is the TIME column of watch.
func timeText(t time.Time) string { return t.Format("15:04:05.000") }

package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// A root of locks (a registry's root, a directory of lock paths) as ls and
// watch show it: one line per lock, and a total.

// lockSummary is one lock path in one line: who holds it, how many wait,
// for how long. Its JSON keeps "path" and "nodes" of queueView, so that a
// script written for ls -json's per-node form reads it unchanged.
type lockSummary struct {
	Path    string     `json:"path"`
	Name    string     `json:"name"`   // the path relative to the root
	Family  string     `json:"family"` // the families of its nodes, in queue order, comma-separated
	Holders int        `json:"holders"`
	Waiting int        `json:"waiting"`
	Holder  *nodeView  `json:"holder,omitempty"` // the first holder
	AgeSec  float64    `json:"age_seconds"`      // the first holder's node's age (since it queued)
	Nodes   []nodeView `json:"nodes"`
}

// totals sums up the locks under a root.
type totals struct {
	Locks   int `json:"locks"`
	Held    int `json:"held"`    // locks with a holder
	Waiting int `json:"waiting"` // nodes waiting, over all locks
}

func (t totals) String() string {
	return fmt.Sprintf("%s, %d held, %d waiting", plural(t.Locks, "lock"), t.Held, t.Waiting)
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
			s.Waiting++
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
	for _, l := range ls {
		if l.Holders > 0 {
			t.Held++
		}
		t.Waiting += l.Waiting
	}
	return t
}

// holderText is the HOLDER column: host, pid and label from the node's
// data; else the holder's node, with its data when it has any (Curator
// writes an IP address, kazoo its identifier).
func (s lockSummary) holderText() string {
	h := s.Holder
	if h == nil {
		return "-"
	}
	name := h.Node[strings.LastIndex(h.Node, "/")+1:]
	var t string
	switch {
	case h.Host != "" || h.Pid != 0:
		t = h.who()
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
	return t
}

func (s lockSummary) ageText() string {
	if s.Holder == nil {
		return "-"
	}
	return age(s.AgeSec)
}

// cells are the columns of ls's table: LOCK FAMILY WAITING AGE HOLDER.
func (s lockSummary) cells() []string {
	return []string{s.Name, s.Family, fmt.Sprint(s.Waiting), s.ageText(), s.holderText()}
}

var summaryHeader = []string{"LOCK", "FAMILY", "WAITING", "AGE", "HOLDER"}

// printSummaries writes ls's view of a root: a table, one line per lock,
// then the total.
func printSummaries(w io.Writer, ls []lockSummary) error {
	t := &table{w: w}
	rows := [][]string{summaryHeader}
	for _, l := range ls {
		rows = append(rows, l.cells())
	}
	if err := t.rows(rows...); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, sum(ls))
	return err
}

// table writes rows of aligned columns, the last column unpadded. Unlike
// text/tabwriter it can go on writing rows later (watch's rows, one per
// change) in the widths the first rows set, widening a column when a
// later cell needs it.
type table struct {
	w      io.Writer
	widths []int
}

func (t *table) rows(rows ...[]string) error {
	for _, r := range rows {
		for i, c := range r {
			if i >= len(t.widths) {
				t.widths = append(t.widths, 0)
			}
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(t.w, b.String())
	return err
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

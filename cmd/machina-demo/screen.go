package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// screen shows the demo's progress: messages that scroll, and below them
// a table of the machine objects that is redrawn in place on a terminal
// when it changes. Elsewhere (a pipe, a CI log) a changed table is printed
// again, so that the output is a readable history.
type screen struct {
	mu    sync.Mutex
	out   io.Writer
	tty   bool
	start time.Time
	// frame is the table on screen, lines its height on a terminal.
	frame string
	lines int
}

func newScreen(f *os.File) *screen {
	st, err := f.Stat()
	tty := err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
	return &screen{out: f, tty: tty, start: time.Now()}
}

// Message prints a line above the table.
func (s *screen) Message(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.erase()
	fmt.Fprintf(s.out, "[%5.1fs] %s\n", time.Since(s.start).Seconds(), fmt.Sprintf(format, args...))
	if s.tty {
		s.draw() // back below the message
	}
}

// Show replaces the table, if it changed.
func (s *screen) Show(frame string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if frame == s.frame {
		return
	}
	s.erase()
	s.frame = frame
	s.draw()
}

// Leave keeps the table on screen and lets what follows print below it.
func (s *screen) Leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = 0
	s.frame = ""
}

// erase removes the table from a terminal (the cursor is below it).
func (s *screen) erase() {
	if s.tty && s.lines > 0 {
		fmt.Fprintf(s.out, "\x1b[%dA\x1b[J", s.lines)
		s.lines = 0
	}
}

func (s *screen) draw() {
	if s.frame == "" {
		return
	}
	if s.tty {
		fmt.Fprint(s.out, s.frame)
		s.lines = strings.Count(s.frame, "\n")
		return
	}
	// Without a terminal each new table is printed once, after a blank
	// line, and stays.
	fmt.Fprint(s.out, "\n"+s.frame+"\n")
}

// renderFrame draws a snapshot as compact tables.
func renderFrame(snap *snapshot) string {
	var b bytes.Buffer
	var rows [][]string
	for _, md := range snap.deployments {
		rows = append(rows, []string{md.Name, md.Spec.Template.Spec.Class.Name, itoa(md.Spec.Replicas),
			itoa(md.Status.Replicas), itoa(md.Status.UpdatedReplicas), itoa(md.Status.ReadyReplicas), itoa(md.Status.AvailableReplicas)})
	}
	table(&b, []string{"MACHINEDEPLOYMENT", "CLASS", "DESIRED", "CURRENT", "UP-TO-DATE", "READY", "AVAILABLE"}, rows)

	rows = nil
	for _, ms := range snap.sets {
		rows = append(rows, []string{ms.Name, ms.Spec.Template.Spec.Class.Name, itoa(ms.Spec.Replicas),
			itoa(ms.Status.Replicas), itoa(ms.Status.ReadyReplicas)})
	}
	table(&b, []string{"MACHINESET", "CLASS", "DESIRED", "CURRENT", "READY"}, rows)

	rows = nil
	for i := range snap.machines {
		m := &snap.machines[i]
		phase := string(m.Status.CurrentStatus.Phase)
		if phase == "" {
			phase = "Creating"
		}
		if m.DeletionTimestamp != nil && m.Status.CurrentStatus.Phase != v1alpha1.MachineTerminating {
			phase += " (deleting)"
		}
		node, ready := "-", "-"
		if n := snap.nodeOf(m); n != nil {
			node = n.Name
			if r := nodeReady(n); r != "" {
				ready = string(r)
			}
		}
		rows = append(rows, []string{m.Name, m.Spec.Class.Name, phase, node, ready})
	}
	table(&b, []string{"MACHINE", "CLASS", "PHASE", "NODE", "NODE READY"}, rows)
	fmt.Fprintf(&b, "Nodes in the cluster: %d\n", len(snap.nodes))
	return b.String()
}

// table writes one aligned table and a blank line; "(none)" for no rows.
func table(b *bytes.Buffer, header []string, rows [][]string) {
	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "(none)")
	}
	_ = w.Flush()
	b.WriteString("\n")
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

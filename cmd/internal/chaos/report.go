package chaos

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is what one phase left behind.
type Row struct {
	Phase                      string
	VMs, Machines, Nodes       int
	Leaks, Duplicates, Orphans int
	// Failed machines went Failed during the phase; Stuck machines were not
	// done (or were missing) when the convergence deadline passed;
	// Replaced machines existed at the start of a phase that must keep them
	// and were gone at its end.
	Failed, Stuck, Replaced int
	CanaryHits              int
	// ManagerExits are exits the manager made by itself; ManagerKills and
	// DriverKills the suite's SIGKILLs.
	ManagerExits, ManagerKills, DriverKills int
	Duration                                time.Duration
	// Problems describe every failure of the phase; empty when it passed.
	Problems []string
}

func (r Row) line() string {
	status := "ok"
	if len(r.Problems) > 0 {
		status = "FAIL"
	}
	return fmt.Sprintf("chaos: %-4s %s: %d VMs, %d Machines, %d Nodes; leaks %d, duplicates %d, orphans %d, Failed %d, stuck %d, replaced %d, canary %d, manager exits %d (kills %d, driver kills %d), %s",
		status, r.Phase, r.VMs, r.Machines, r.Nodes, r.Leaks, r.Duplicates, r.Orphans, r.Failed, r.Stuck, r.Replaced,
		r.CanaryHits, r.ManagerExits, r.ManagerKills, r.DriverKills, r.Duration.Round(100*time.Millisecond))
}

// Report is a run's results.
type Report struct {
	Seed int64
	Rows []Row
}

// Problems lists every failure of every phase.
func (r *Report) Problems() []string {
	var out []string
	for _, row := range r.Rows {
		for _, p := range row.Problems {
			out = append(out, row.Phase+": "+p)
		}
	}
	return out
}

// print writes the results table, in Markdown so that docs/reliability.md
// can take it as it is.
func (r *Report) print(w io.Writer) {
	fmt.Fprintf(w, "\nchaos results (seed %d)\n\n", r.Seed)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	header := []string{"phase", "VMs", "Machines", "Nodes", "leaks", "duplicates", "orphans", "Failed", "stuck", "replaced", "canary", "manager exits", "kills (manager/driver)", "duration", "result"}
	fmt.Fprintln(tw, "| "+strings.Join(header, "\t| ")+"\t|")
	fmt.Fprintln(tw, "|"+strings.Repeat("---\t|", len(header)))
	var total Row
	for _, row := range r.Rows {
		result := "ok"
		if len(row.Problems) > 0 {
			result = "FAIL"
		}
		fmt.Fprintf(tw, "| %s\t| %d\t| %d\t| %d\t| %d\t| %d\t| %d\t| %d\t| %d\t| %d\t| %d\t| %d\t| %d/%d\t| %s\t| %s\t|\n",
			row.Phase, row.VMs, row.Machines, row.Nodes, row.Leaks, row.Duplicates, row.Orphans, row.Failed, row.Stuck, row.Replaced,
			row.CanaryHits, row.ManagerExits, row.ManagerKills, row.DriverKills, row.Duration.Round(time.Second), result)
		total.Leaks += row.Leaks
		total.Duplicates += row.Duplicates
		total.Orphans += row.Orphans
		total.Failed += row.Failed
		total.Stuck += row.Stuck
		total.Replaced += row.Replaced
		total.CanaryHits += row.CanaryHits
		total.ManagerExits += row.ManagerExits
		total.ManagerKills += row.ManagerKills
		total.DriverKills += row.DriverKills
		total.Duration += row.Duration
	}
	result := "ok"
	if len(r.Problems()) > 0 {
		result = "FAIL"
	}
	fmt.Fprintf(tw, "| total\t| \t| \t| \t| %d\t| %d\t| %d\t| %d\t| %d\t| %d\t| %d\t| %d\t| %d/%d\t| %s\t| %s\t|\n",
		total.Leaks, total.Duplicates, total.Orphans, total.Failed, total.Stuck, total.Replaced, total.CanaryHits,
		total.ManagerExits, total.ManagerKills, total.DriverKills, total.Duration.Round(time.Second), result)
	_ = tw.Flush()
}

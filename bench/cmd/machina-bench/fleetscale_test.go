package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPrintFleetPutsBothSizesSideBySide checks the fleet table's per-machine
// arithmetic: RSS per machine is the peak over the pair divided by the
// machines, CPU per machine is in milliseconds, and the marginal memory is
// the slope of the peak between the two sizes.
func TestPrintFleetPutsBothSizesSideBySide(t *testing.T) {
	scenario := func(name string, n int, rss, cpu float64, writes int) ScenarioResult {
		return ScenarioResult{Name: name, Machines: n, Done: true, Seconds: 10,
			Manager:         ProcessCost{PeakRSSMiB: rss, CPUSeconds: cpu},
			ManagerRequests: Requests{MachineNodeWrites: writes, Writes: 2 * writes}}
	}
	r := &Results{Config: RunConfig{Machines: 1000, Fleet: 5000}, Scenarios: []ScenarioResult{
		scenario(scaleUpName(1000), 1000, 150, 8, 5000),
		scenario(scaleDownName(1000), 1000, 140, 20, 10000),
		scenario(scaleUpName(5000), 5000, 550, 40, 25000),
		scenario(scaleDownName(5000), 5000, 560, 100, 50000),
	}}
	var out bytes.Buffer
	printTable(&out, r)
	got := out.String()
	for _, want := range []string{
		"| 1000 | 10.0 | 10.0 | 5.00 / 10.00 | 10.00 / 20.00 | 150 | 154 | 8.0 | 20.0 |",
		"| 5000 | 10.0 | 10.0 | 5.00 / 10.00 | 10.00 / 20.00 | 560 | 115 | 8.0 | 20.0 |",
		// (560 - 150) MiB over 4000 machines.
		"marginal manager memory per machine (peak RSS slope between 1000 and 5000): 105 KiB",
	} {
		if !strings.Contains(strings.Join(strings.Fields(got), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
}

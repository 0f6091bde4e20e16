package manager

import (
	"flag"
	"io"
	"math"
	"sort"
	"testing"
	"time"
)

// flagNames are the manager's flags in a fixed order, so that a fuzz input
// picks one by index.
var flagNames = func() []string {
	o := DefaultOptions()
	fs := flag.NewFlagSet("names", flag.ContinueOnError)
	o.AddFlags(fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	return names
}()

// FuzzManagerFlags sets two of the manager's flags to any text (durations,
// the QPS float, counts, lists, the max-replacements limit, addresses) and
// validates: no panic, and options that pass Validate are usable: a finite,
// positive QPS, positive timeouts and periods, a limit that parses.
func FuzzManagerFlags(f *testing.F) {
	for i, name := range flagNames {
		switch name {
		case "kube-api-qps":
			f.Add(uint8(i), "NaN", uint8(i), "Inf")
			f.Add(uint8(i), "1e39", uint8(i), "-0")
		case "machine-max-replacements":
			f.Add(uint8(i), "71582788300%", uint8(i), "9223372036854775807%")
		default:
			f.Add(uint8(i), "1s", uint8(0), "")
		}
	}
	f.Fuzz(func(t *testing.T, first uint8, firstValue string, second uint8, secondValue string) {
		t.Setenv(DriverEndpointEnv, "")
		o := DefaultOptions()
		fs := flag.NewFlagSet("fuzz", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.AddFlags(fs)
		args := []string{
			"--" + flagNames[int(first)%len(flagNames)] + "=" + firstValue,
			"--" + flagNames[int(second)%len(flagNames)] + "=" + secondValue,
		}
		if fs.Parse(args) != nil || o.Validate() != nil {
			return
		}
		if q := float64(o.KubeAPIQPS); math.IsNaN(q) || math.IsInf(q, 0) || q <= 0 {
			t.Fatalf("%v: QPS %v passed validation", args, o.KubeAPIQPS)
		}
		for name, d := range map[string]time.Duration{
			"driver-create-timeout": o.DriverCreateTimeout, "machine-health-timeout": o.MachineHealthTimeout,
			"machine-safety-orphan-vms-period": o.MachineSafetyOrphanVMsPeriod, "min-resync-period": o.MinResyncPeriod,
		} {
			if d <= 0 {
				t.Fatalf("%v: --%s %v passed validation", args, name, d)
			}
		}
	})
}

// Package gobench parses the result lines `go test -bench` prints.
package gobench

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Result is one benchmark result line.
type Result struct {
	// Name is the benchmark's name without the GOMAXPROCS suffix
	// ("BenchmarkX/sub", not "BenchmarkX/sub-2").
	Name string `json:"name"`
	// Procs is GOMAXPROCS of the run (the suffix), 1 when there is none.
	Procs int `json:"procs"`
	// Iterations is b.N.
	Iterations int `json:"iterations"`
	// Metrics maps each unit (ns/op, B/op, allocs/op and every
	// b.ReportMetric unit) to its value.
	Metrics map[string]float64 `json:"metrics"`
}

// Parse returns the result lines of a `go test -bench` output, skipping
// every other line.
func Parse(r io.Reader) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
			continue
		}
		n, err := strconv.Atoi(fields[1])
		if err != nil {
			continue // e.g. "BenchmarkX ... FAIL" or a log line
		}
		res := Result{Name: fields[0], Procs: 1, Iterations: n, Metrics: map[string]float64{}}
		if i := strings.LastIndexByte(res.Name, '-'); i > 0 {
			if p, err := strconv.Atoi(res.Name[i+1:]); err == nil {
				res.Name, res.Procs = res.Name[:i], p
			}
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark %s: value %q of %s: %w", fields[0], fields[i], fields[i+1], err)
			}
			res.Metrics[fields[i+1]] = v
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/machina-io/machina/bench/internal/gobench"
)

// driverBenchPackage holds the driver call benchmarks
// (core/internal/driver/bench_test.go): the driver client is internal to
// core, so they are Go benchmarks there, run here with `go test`.
const driverBenchPackage = "./core/internal/driver/"

// DriverCallResult is one driver call benchmark.
type DriverCallResult struct {
	Name        string  `json:"name"`
	CallsPerSec float64 `json:"callsPerSecond"`
	NsPerOp     float64 `json:"nsPerOp"`
	P50Micros   float64 `json:"p50Micros"`
	P99Micros   float64 `json:"p99Micros"`
	AllocsPerOp float64 `json:"allocsPerOp"`
	BytesPerOp  float64 `json:"bytesPerOp"`
	GoMaxProcs  int     `json:"gomaxprocs"`
	Iterations  int     `json:"iterations"`
}

// runDriverBench runs the driver call benchmarks of the repository at repo
// and returns their results; the raw output goes to logPath.
func runDriverBench(ctx context.Context, repo, benchtime, logPath string) ([]DriverCallResult, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", benchtime, "-count", "1", driverBenchPackage)
	cmd.Dir = repo
	var out bytes.Buffer
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd.Stdout = io.MultiWriter(&out, log)
	cmd.Stderr = log
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test -bench %s: %w (output in %s)", driverBenchPackage, err, logPath)
	}
	parsed, err := gobench.Parse(&out)
	if err != nil {
		return nil, err
	}
	if len(parsed) == 0 {
		return nil, fmt.Errorf("go test -bench %s printed no results (output in %s)", driverBenchPackage, filepath.Clean(logPath))
	}
	var res []DriverCallResult
	for _, p := range parsed {
		res = append(res, DriverCallResult{
			Name:        p.Name,
			CallsPerSec: p.Metrics["calls/s"],
			NsPerOp:     p.Metrics["ns/op"],
			P50Micros:   p.Metrics["p50-µs"],
			P99Micros:   p.Metrics["p99-µs"],
			AllocsPerOp: p.Metrics["allocs/op"],
			BytesPerOp:  p.Metrics["B/op"],
			GoMaxProcs:  p.Procs,
			Iterations:  p.Iterations,
		})
	}
	return res, nil
}

package gobench

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// output is what `go test -bench . -benchmem` printed for the driver call
// benchmarks, with a log line and the trailer.
const output = `goos: linux
goarch: amd64
pkg: github.com/machina-io/machina/core/internal/driver
cpu: Intel(R) Xeon(R) Processor
BenchmarkDriverCall/GetMachineStatus/serial-2         	   16066	    148291 ns/op	      6743 calls/s	       101.7 p50-µs	      1096 p99-µs	   25863 B/op	     451 allocs/op
BenchmarkDriverCall/CreateMachine/parallel-8x-2       	   15832	    187408 ns/op	      5336 calls/s	      1455 p50-µs	     21083 p99-µs	   29991 B/op	     441 allocs/op
BenchmarkSingle   	 1000	 1234 ns/op
    bench_test.go:12: a log line
PASS
ok  	github.com/machina-io/machina/core/internal/driver	27.775s
`

func TestParse(t *testing.T) {
	res, err := Parse(strings.NewReader(output))
	require.NoError(t, err)
	require.Len(t, res, 3)

	assert.Equal(t, "BenchmarkDriverCall/GetMachineStatus/serial", res[0].Name)
	assert.Equal(t, 2, res[0].Procs)
	assert.Equal(t, 16066, res[0].Iterations)
	assert.Equal(t, map[string]float64{
		"ns/op": 148291, "calls/s": 6743, "p50-µs": 101.7, "p99-µs": 1096, "B/op": 25863, "allocs/op": 451,
	}, res[0].Metrics)

	assert.Equal(t, "BenchmarkDriverCall/CreateMachine/parallel-8x", res[1].Name, "only the GOMAXPROCS suffix is cut")
	assert.Equal(t, 1455.0, res[1].Metrics["p50-µs"])

	assert.Equal(t, "BenchmarkSingle", res[2].Name)
	assert.Equal(t, 1, res[2].Procs, "no suffix when GOMAXPROCS is 1")
}

func TestParseRejectsABadValue(t *testing.T) {
	_, err := Parse(strings.NewReader("BenchmarkX-2 10 fast ns/op\n"))
	require.ErrorContains(t, err, `"fast"`)
}

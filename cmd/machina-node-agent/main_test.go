package main

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestMain(m *testing.M) {
	// Each agent logs through the logger it is given; this quiets
	// controller-runtime's warning about its unused global one.
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"help", []string{"--help"}, 0, []string{"Usage: machina-node-agent", "-apply-command string", "-max-attempts int"}},
		{"missing", []string{"--node-name=n"}, 2, []string{"--root is required", "--source-dir is required", "--state-dir is required"}},
		{"attempts", []string{"--node-name=n", "--root=/", "--source-dir=/", "--state-dir=/", "--max-attempts=0"}, 2,
			[]string{"--max-attempts must be at least 1"}},
		{"timeout", []string{"--node-name=n", "--root=/", "--source-dir=/", "--state-dir=/", "--apply-timeout=0s"}, 2,
			[]string{"--apply-timeout must be positive"}},
		{"arguments", []string{"--node-name=n", "--root=/", "--source-dir=/", "--state-dir=/", "extra"}, 2,
			[]string{`unexpected arguments: ["extra"]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NODE_NAME", "")
			var out bytes.Buffer
			assert.Equal(t, tc.code, run(context.Background(), tc.args, &out, &out))
			for _, w := range tc.want {
				assert.Contains(t, out.String(), w)
			}
		})
	}
}

func TestValidTarget(t *testing.T) {
	for target, ok := range map[string]bool{
		"web-7d9f8c6b5": true, "rendered-worker-1a2b": true, "a.b": true,
		"": false, ".": false, "..": false, "../x": false, "a/b": false, `a\b`: false, "a\x00b": false,
	} {
		assert.Equal(t, ok, validTarget(target) == "", "%q: %s", target, validTarget(target))
	}
}

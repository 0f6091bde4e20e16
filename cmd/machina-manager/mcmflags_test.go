package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// mcmFlags are the flags of MCM's two binaries: machine-controller
// (pkg/util/provider/app/options/options.go) and machine-controller-manager
// (cmd/machine-controller-manager/app/options/options.go), with the
// leader-election and log flags they add from component-base.
var mcmFlags = []string{
	"port", "address", "namespace", "control-kubeconfig", "target-kubeconfig",
	"concurrent-syncs", "min-resync-period", "kube-api-qps", "kube-api-burst", "kube-api-content-type",
	"cloud-provider", "profiling", "contention-profiling", "controller-start-interval",
	"machine-creation-timeout", "machine-health-timeout", "machine-drain-timeout", "machine-inplace-update-timeout",
	"machine-max-evict-retries", "machine-pv-detach-timeout", "machine-pv-reattach-timeout", "machine-preserve-timeout",
	"machine-safety-orphan-vms-period", "machine-safety-apiserver-statuscheck-period",
	"machine-safety-apiserver-statuscheck-timeout", "machine-safety-overshooting-period",
	"safety-up", "safety-down", "autoscaler-scaledown-annotation-during-rollout",
	"node-conditions", "bootstrap-token-auth-extra-groups", "resource-exhausted-retry",
	"leader-elect", "leader-elect-lease-duration", "leader-elect-renew-deadline", "leader-elect-retry-period",
	"leader-elect-resource-lock", "v",
}

// TestMCMFlagsAreKeptOrRefused holds docs/operating.md's table of MCM's
// flags ("Differences from MCM") to the binary: every MCM flag has a row,
// a flag the table calls refused makes the command line fail, and every
// other one is a flag of machina-manager. No MCM flag is accepted and
// ignored: the ones kept are read (TestNothingParsedAndIgnored in core/).
func TestMCMFlagsAreKeptOrRefused(t *testing.T) {
	rows := mcmFlagRows(t)
	for _, name := range mcmFlags {
		if _, ok := rows[name]; !ok {
			t.Errorf("MCM's --%s has no row in docs/operating.md's table of flags", name)
		}
	}

	var usage bytes.Buffer
	_, err := parseFlags([]string{"-h"}, &usage)
	require.True(t, errors.Is(err, flag.ErrHelp), "parseFlags(-h): %v", err)
	for name, refused := range rows {
		defined := regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(name) + `(\s|$)`).Match(usage.Bytes())
		if !refused {
			if !defined {
				t.Errorf("the table keeps --%s, but machina-manager has no such flag", name)
			}
			continue
		}
		if defined {
			t.Errorf("the table says --%s is refused, but machina-manager defines it", name)
			continue
		}
		var out bytes.Buffer
		_, err := parseFlags([]string{"--" + name + "=1"}, &out)
		if err == nil || !strings.Contains(err.Error(), "flag provided but not defined: -"+name) {
			t.Errorf("--%s=1: want the command line refused as an unknown flag, got %v", name, err)
		}
	}
}

// mcmFlagRows reads the flags table of docs/operating.md's "Differences
// from MCM": each flag named in a row's first cell, and whether the row
// says it is refused.
func mcmFlagRows(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile("../../docs/operating.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n## Differences from MCM\n")
	require.True(t, ok, "docs/operating.md has no section Differences from MCM")
	_, table, ok := strings.Cut(section, "\n### Flags\n")
	require.True(t, ok, "Differences from MCM has no Flags table")
	table, _, _ = strings.Cut(table, "\n### ")
	flagName := regexp.MustCompile("`--([a-z0-9-]+)`")
	rows := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(line, "| ") {
			continue
		}
		refused := strings.HasPrefix(strings.TrimSpace(cells[2]), "refused")
		for _, m := range flagName.FindAllStringSubmatch(cells[1], -1) {
			rows[m[1]] = refused
		}
	}
	require.Greater(t, len(rows), 30, "the test no longer understands the table")
	return rows
}

package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/conformance"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// TestReports runs the suite against a driver with one breakage and checks
// the JSON, JUnit and summary renderings of the report.
func TestReports(t *testing.T) {
	d := newRefDriver([]driverv1alpha1.Capability_Type{driverv1alpha1.Capability_TYPE_LIST_MACHINES}, breakage{badPluginName: true})
	rep := runAgainst(t, d)
	c := rep.Counts()
	require.Equal(t, 1, c.Failed, summary(rep))

	var js bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	var doc struct {
		Passed bool `json:"passed"`
		Totals struct {
			Passed, Failed, Skipped int
		} `json:"totals"`
		ByCapability map[string]struct {
			Passed, Failed, Skipped int
		} `json:"byCapability"`
		Driver struct {
			Name         string   `json:"name"`
			Capabilities []string `json:"capabilities"`
		} `json:"driver"`
		Tests []struct {
			Name, Section, Capability, Status string
			Failures                          []string
		} `json:"tests"`
	}
	require.NoError(t, json.Unmarshal(js.Bytes(), &doc))
	assert.False(t, doc.Passed)
	assert.Equal(t, c.Passed, doc.Totals.Passed)
	assert.Equal(t, 1, doc.Totals.Failed)
	assert.Equal(t, "Reference_Driver", doc.Driver.Name)
	assert.Equal(t, []string{"TYPE_LIST_MACHINES"}, doc.Driver.Capabilities)
	assert.Equal(t, 1, doc.ByCapability[conformance.CapabilityRequired].Failed)
	assert.Equal(t, 4, doc.ByCapability["TYPE_GET_VOLUME_IDS"].Skipped, "the volume tests skip without the capability")
	assert.Zero(t, doc.ByCapability["TYPE_LIST_MACHINES"].Failed)
	for _, tc := range doc.Tests {
		if tc.Name == "Identity/plugin_name" {
			assert.Equal(t, "failed", tc.Status)
			assert.Equal(t, "§5.1.2", tc.Section)
			require.Len(t, tc.Failures, 1)
		}
	}

	var xm bytes.Buffer
	require.NoError(t, rep.WriteJUnit(&xm))
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suite    []struct {
			Cases []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
				Failure   *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(xm.Bytes(), &suites))
	assert.Equal(t, len(rep.Tests), suites.Tests)
	assert.Equal(t, 1, suites.Failures)
	assert.Equal(t, c.Skipped, suites.Skipped)
	require.Len(t, suites.Suite, 1)
	failed := 0
	for _, jc := range suites.Suite[0].Cases {
		if jc.Failure != nil {
			failed++
			assert.Equal(t, "Identity/plugin_name [§5.1.2]", jc.Name)
			assert.Equal(t, "Identity", jc.Classname)
			assert.Contains(t, jc.Failure.Message, "§5.1.2 GetPluginInfo.name")
		}
	}
	assert.Equal(t, 1, failed)

	var sum strings.Builder
	rep.WriteSummary(&sum)
	assert.Contains(t, sum.String(), "Reference_Driver v0.1.0")
	assert.Contains(t, sum.String(), "Identity/plugin_name [§5.1.2]")
	assert.Contains(t, sum.String(), "RESULT: FAIL")
}

func TestRunnerFocusOnSuite(t *testing.T) {
	d := newRefDriver(allCaps, breakage{})
	endpoint := serveRef(t, d)
	r := &conformance.Runner{Focus: regexp.MustCompile(`^(Identity|DeleteMachine)/`), Skip: regexp.MustCompile(`invalid`)}
	rep := r.Run(context.Background(), refConfig(endpoint))
	require.True(t, rep.Passed(), summary(rep))
	var names []string
	for _, res := range rep.Tests {
		names = append(names, res.Name)
	}
	assert.Equal(t, []string{
		"Identity/plugin_name", "Identity/vendor_version", "Identity/manifest", "Identity/providers", "Identity/known_capabilities",
		"Identity/probe", "Identity/stable_answers",
		"DeleteMachine/removes_vm", "DeleteMachine/idempotent", "DeleteMachine/by_name_only",
		"DeleteMachine/other_provider_id_kept", "DeleteMachine/recreate_after_delete", "DeleteMachine/provider_id_of_another_machine",
		"DeleteMachine/unknown_machine", "Identity/stable_to_the_end",
	}, names)
	assert.Equal(t, len(conformance.Tests())-len(names), rep.Filtered)
	assert.Empty(t, d.liveVMs())
}

func TestRunnerInterrupted(t *testing.T) {
	d := newRefDriver(allCaps, breakage{})
	endpoint := serveRef(t, d)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep := (&conformance.Runner{}).Run(ctx, refConfig(endpoint))
	assert.True(t, rep.Interrupted)
	assert.False(t, rep.Passed(), "an interrupted run never passes")
	require.Len(t, rep.Tests, len(conformance.Tests()))
	for _, res := range rep.Tests {
		assert.Equal(t, conformance.StatusSkipped, res.Status, res.Name)
		assert.Equal(t, "interrupted before it started", res.SkipReason)
	}
}

func TestRunnerUnreachableDriver(t *testing.T) {
	cfg := refConfig("unix:///nonexistent/machina-conformance.sock")
	cfg.Timeouts.Ready = 300 * time.Millisecond // the driver never comes
	rep := (&conformance.Runner{}).Run(context.Background(), cfg)
	assert.False(t, rep.Passed())
	assert.Empty(t, rep.Tests)
	require.Len(t, rep.SuiteFailures, 1)
	assert.Contains(t, rep.SuiteFailures[0], "cannot reach the driver at unix:///nonexistent/machina-conformance.sock")
}

package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// Lines as kube-apiserver writes them (trimmed to the fields read, plus
// a few it ignores).
const sample = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"create","user":{"username":"machina-manager","groups":["system:masters"]},"userAgent":"machina-manager/v0","objectRef":{"resource":"machines","namespace":"bench","name":"m-1","apiGroup":"machine.sapcloud.io","apiVersion":"v1alpha1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2026-11-22T07:00:00.100000Z","stageTimestamp":"2026-11-22T07:00:00.105000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"patch","user":{"username":"machina-manager"},"objectRef":{"resource":"machines","subresource":"status","namespace":"bench","name":"m-1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-22T07:00:00.900000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"update","user":{"username":"machina-manager"},"objectRef":{"resource":"nodes","name":"m-1"},"responseStatus":{"code":409},"requestReceivedTimestamp":"2026-11-22T07:00:01.200000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"get","user":{"username":"machina-manager"},"objectRef":{"resource":"secrets","namespace":"bench","name":"s"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-22T07:00:01.300000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseStarted","verb":"watch","user":{"username":"machina-manager"},"objectRef":{"resource":"machines"},"requestReceivedTimestamp":"2026-11-22T07:00:01.400000Z"}

{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"patch","user":{"username":"machina-driver-virtualnode"},"objectRef":{"resource":"nodes","subresource":"status","name":"m-1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-22T07:00:01.500000Z"}
`

func TestCountByUserVerbAndResource(t *testing.T) {
	c, err := Count(strings.NewReader(sample))
	require.NoError(t, err)

	assert.Equal(t, map[string]int{
		"create machines":       1,
		"patch machines/status": 1,
		"update nodes":          1,
		"get secrets":           1,
	}, c.ByVerbResource("machina-manager"), "a ResponseStarted stage is not a second request")
	assert.Equal(t, map[string]int{"patch nodes/status": 1}, c.ByVerbResource("machina-driver-virtualnode"))

	writes := c.Total("machina-manager", func(verb, _ string) bool { return IsWrite(verb) })
	assert.Equal(t, 3, writes)
	assert.Equal(t, 1, c.Conflicts["machina-manager"])
	assert.Equal(t, 0, c.Conflicts["machina-driver-virtualnode"])
	assert.Equal(t, 2, c.PeakPerSecond("machina-manager"), "two requests in 07:00:00 and two in 07:00:01")
}

func TestReadCountsOnlyTheGivenStretch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	lines := strings.SplitAfter(sample, "\n")
	require.NoError(t, os.WriteFile(path, []byte(lines[0]), 0o600))
	from, err := Size(path)
	require.NoError(t, err)

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(lines[1] + lines[2])
	require.NoError(t, err)
	to, err := Size(path)
	require.NoError(t, err)
	_, err = f.WriteString(lines[3])
	require.NoError(t, err)
	require.NoError(t, f.Close())

	c, err := Read(path, from, to)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"patch machines/status": 1, "update nodes": 1}, c.ByVerbResource("machina-manager"))
}

func TestSizeOfAMissingLogIsZero(t *testing.T) {
	n, err := Size(filepath.Join(t.TempDir(), "none.log"))
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestCountRejectsABrokenLine(t *testing.T) {
	_, err := Count(strings.NewReader(`{"stage":"ResponseComplete"` + "\n"))
	require.ErrorContains(t, err, "line 1")
}

func TestPolicyAuditsOnlyTheGivenUsers(t *testing.T) {
	var p struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		OmitStages []string `json:"omitStages"`
		Rules      []struct {
			Level string   `json:"level"`
			Users []string `json:"users"`
		} `json:"rules"`
	}
	require.NoError(t, yaml.UnmarshalStrict([]byte(Policy("machina-manager", "machina-driver-virtualnode")), &p))
	assert.Equal(t, "audit.k8s.io/v1", p.APIVersion)
	assert.Equal(t, "Policy", p.Kind)
	assert.ElementsMatch(t, []string{"RequestReceived", "ResponseStarted"}, p.OmitStages)
	require.Len(t, p.Rules, 2)
	assert.Equal(t, "Metadata", p.Rules[0].Level)
	assert.Equal(t, []string{"machina-manager", "machina-driver-virtualnode"}, p.Rules[0].Users)
	assert.Equal(t, "None", p.Rules[1].Level)
	assert.Empty(t, p.Rules[1].Users, "the last rule matches everyone else")
}

// A log that shrank between the two offsets was rotated: the stretch's
// requests are not in it, which must not read as zero requests.
func TestReadRejectsALogThatShrank(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	require.NoError(t, os.WriteFile(path, []byte("{}\n"), 0o600))
	_, err := Read(path, 100, 3)
	require.ErrorContains(t, err, "shrank")
}

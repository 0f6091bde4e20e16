package mcruntime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

func quantity(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *mcfgv1.ContainerRuntimeConfiguration
		want string
	}{
		{"nil", nil, "spec.containerRuntimeConfig is empty"},
		{"empty", &mcfgv1.ContainerRuntimeConfiguration{}, "sets none of pidsLimit"},
		{"pidsLimit too low", &mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](10)}, "pidsLimit 10: must be -1 or 0 (no limit) or at least 20"},
		{"pidsLimit negative", &mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](-5)}, "pidsLimit -5"},
		{"logLevel", &mcfgv1.ContainerRuntimeConfiguration{LogLevel: "verbose"}, `logLevel "verbose": must be one of fatal, panic, error, warn, info, debug, trace`},
		{"logSizeMax", &mcfgv1.ContainerRuntimeConfiguration{LogSizeMax: quantity("1k")}, "logSizeMax 1k: must be negative (no limit) or at least 8k"},
		{"overlaySize", &mcfgv1.ContainerRuntimeConfiguration{OverlaySize: quantity("-1G")}, "overlaySize -1G: may not be negative"},
		{"defaultRuntime", &mcfgv1.ContainerRuntimeConfiguration{DefaultRuntime: "kata"}, `defaultRuntime "kata": must be crun or runc`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validate(tc.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	for _, ok := range []*mcfgv1.ContainerRuntimeConfiguration{
		{PidsLimit: ptr.To[int64](-1)}, {PidsLimit: ptr.To[int64](0)}, {PidsLimit: ptr.To[int64](20)},
		{LogSizeMax: quantity("-1")}, {LogSizeMax: quantity("8k")}, {OverlaySize: quantity("0")}, {DefaultRuntime: "runc"},
	} {
		assert.NoError(t, validate(ok), "%+v", ok)
	}
}

func TestDropins(t *testing.T) {
	got := dropins(&mcfgv1.ContainerRuntimeConfiguration{
		PidsLimit: ptr.To[int64](2048), LogLevel: "debug", LogSizeMax: quantity("64Mi"),
		OverlaySize: quantity("10G"), DefaultRuntime: "crun",
	})
	assert.Equal(t, []dropin{
		{"/etc/crio/crio.conf.d/01-ctrcfg-pidsLimit", "[crio.runtime]\npids_limit = 2048\n"},
		{"/etc/crio/crio.conf.d/01-ctrcfg-logLevel", "[crio.runtime]\nlog_level = \"debug\"\n"},
		{"/etc/crio/crio.conf.d/01-ctrcfg-logSizeMax", "[crio.runtime]\nlog_size_max = 67108864\n"},
		{"/etc/crio/crio.conf.d/01-ctrcfg-overlaySize", "[crio]\nstorage_option = [\"overlay.size=10G\"]\n"},
		{"/etc/crio/crio.conf.d/01-ctrcfg-defaultRuntime", "[crio.runtime]\ndefault_runtime = \"crun\"\n"},
	}, got)
}

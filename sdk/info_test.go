package sdk

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInfoValidate(t *testing.T) {
	manifest := map[string]string{}
	for i := range 17 {
		manifest[strings.Repeat("k", i+1)] = "v"
	}
	tests := []struct {
		name string
		info Info
		want string // empty: valid
	}{
		{"reverse domain", Info{Name: "inmemory.driver.machina.io", Version: "1.4.0"}, ""},
		{"leading v and pre-release", Info{Name: "a", Version: "v0.1.0-dev+build.5"}, ""},
		{"63 characters", Info{Name: strings.Repeat("a", 63), Version: "1.0.0"}, ""},
		{"64 characters", Info{Name: strings.Repeat("a", 64), Version: "1.0.0"}, "longer than 63"},
		{"no name", Info{Version: "1.0.0"}, "name is required"},
		{"upper case", Info{Name: "Driver.io", Version: "1.0.0"}, "lower-case alphanumerics"},
		{"trailing dot", Info{Name: "driver.", Version: "1.0.0"}, "lower-case alphanumerics"},
		{"no version", Info{Name: "d"}, "version is required"},
		{"two-part version", Info{Name: "d", Version: "1.0"}, "not a semantic version"},
		{"leading zero", Info{Name: "d", Version: "01.0.0"}, "not a semantic version"},
		{"too many manifest entries", Info{Name: "d", Version: "1.0.0", Manifest: manifest}, "17 entries"},
		{"providers", Info{Name: "d", Version: "1.0.0", Providers: []string{"AWS", "inmemory"}}, ""},
		{"empty provider", Info{Name: "d", Version: "1.0.0", Providers: []string{""}}, `provider "" must be 1 to 63 bytes`},
		{"provider too long", Info{Name: "d", Version: "1.0.0", Providers: []string{strings.Repeat("p", 64)}}, "must be 1 to 63 bytes"},
		{"provider twice", Info{Name: "d", Version: "1.0.0", Providers: []string{"AWS", "AWS"}}, `provider "AWS" is listed twice`},
		{"manifest value too long", Info{Name: "d", Version: "1.0.0", Manifest: map[string]string{"k": strings.Repeat("v", 129)}}, "manifest entry \"k\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.info.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
			_, err = NewServer(tt.info, newTestDriver())
			require.ErrorContains(t, err, tt.want, "NewServer validates Info")
		})
	}
}

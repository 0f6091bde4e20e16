package inplace

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

func TestMaxUnavailable(t *testing.T) {
	num, pct := intstr.FromInt32, intstr.FromString
	for _, tc := range []struct {
		v       *intstr.IntOrString
		total   int
		want    int32
		wantErr bool
	}{
		{nil, 10, 1, false},
		{ptr(num(3)), 10, 3, false},
		{ptr(num(0)), 10, 1, false},
		{ptr(pct("30%")), 10, 3, false},
		{ptr(pct("35%")), 10, 3, false}, // rounded down
		{ptr(pct("5%")), 10, 1, false},  // 0 becomes 1
		{ptr(pct("100%")), 7, 7, false},
		{ptr(num(-1)), 10, 0, true},
		{ptr(pct("many")), 10, 0, true},
		{ptr(pct("101%")), 10, 0, true},
		{ptr(pct("100000000000%")), 3, 0, true}, // wrapped to a negative budget before
		{ptr(pct("99999999999999999999999%")), 3, 0, true},
		{ptr(pct("-5%")), 10, 0, true},
		{ptr(pct(" 5%")), 10, 0, true},
		{ptr(pct("%")), 10, 0, true},
		{ptr(num(2147483647)), 3, 2147483647, false}, // above total is valid
	} {
		got, err := MaxUnavailable(tc.v, tc.total)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("MaxUnavailable(%v, %d) = %d, %v; want %d, error %v", tc.v, tc.total, got, err, tc.want, tc.wantErr)
		}
	}
}

// FuzzMaxUnavailable: whatever the user writes, the budget is refused or is
// a positive count no larger than total (for a percentage) or the number.
func FuzzMaxUnavailable(f *testing.F) {
	for _, s := range []string{"10%", "100%", "0%", "101%", "100000000000%", "7", "-1", "", "%", "1e3%"} {
		f.Add(s, uint16(10))
	}
	f.Fuzz(func(t *testing.T, s string, size uint16) {
		total := int(size)
		v := intstr.Parse(s)
		got, err := MaxUnavailable(&v, total)
		if err != nil {
			return
		}
		if got < 1 {
			t.Fatalf("MaxUnavailable(%q, %d) = %d, want at least 1", s, total, got)
		}
		if v.Type == intstr.String && int(got) > max(total, 1) {
			t.Fatalf("MaxUnavailable(%q, %d) = %d, above the pool's %d nodes", s, total, got, total)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestConfigUpdating(t *testing.T) {
	node := func(a map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: a}}
	}
	d, c, st := mcv1.DesiredConfigAnnotation, mcv1.CurrentConfigAnnotation, mcv1.StateAnnotation
	for _, tc := range []struct {
		name string
		a    map[string]string
		want bool
	}{
		{"in no pool", nil, false},
		{"on its configuration", map[string]string{d: "r-1", c: "r-1", st: "Done"}, false},
		{"given a new configuration", map[string]string{d: "r-2", c: "r-1", st: "Done"}, true},
		{"first configuration", map[string]string{d: "r-1"}, true},
		{"agent working", map[string]string{d: "r-1", c: "r-1", st: "Working"}, true},
		{"degraded by drift", map[string]string{d: "r-1", c: "r-1", st: "Degraded"}, false},
	} {
		if got := ConfigUpdating(node(tc.a)); got != tc.want {
			t.Errorf("%s: ConfigUpdating = %v, want %v", tc.name, got, tc.want)
		}
	}
}

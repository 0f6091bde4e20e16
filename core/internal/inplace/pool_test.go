package inplace

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
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
	} {
		got, err := MaxUnavailable(tc.v, tc.total)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("MaxUnavailable(%v, %d) = %d, %v; want %d, error %v", tc.v, tc.total, got, err, tc.want, tc.wantErr)
		}
	}
}

func ptr[T any](v T) *T { return &v }

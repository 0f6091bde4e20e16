package meltdown

import (
	"math"
	"testing"
)

// FuzzParseLimit parses any --machine-max-replacements flag or annotation
// value and resolves it for any replica count: no panic; a limit that
// parses resolves to a count that is never negative and never wraps
// around, at least 1 for a positive percentage of a non-empty deployment
// (rounding down would switch replacement off silently).
func FuzzParseLimit(f *testing.F) {
	for _, s := range []string{"1", "0", "25%", " 10% ", "-1", "-5%", "71582788300%", "9223372036854775807%", "2147483648", "1.5", "%", "+3"} {
		f.Add(s, int32(10))
	}
	f.Add("100%", int32(math.MaxInt32))
	f.Fuzz(func(t *testing.T, s string, replicas int32) {
		limit, err := ParseLimit(s)
		if err != nil {
			return
		}
		n, err := resolve(limit, replicas)
		if err != nil {
			t.Fatalf("%q parsed as %v but does not resolve for %d replicas: %v", s, limit, replicas, err)
		}
		if n < 0 {
			t.Fatalf("%q of %d replicas resolves to %d", s, replicas, n)
		}
		if limit.Type == 1 && limit.StrVal != "0%" && replicas > 0 && n < 1 {
			t.Fatalf("%q of %d replicas resolves to %d", s, replicas, n)
		}
	})
}

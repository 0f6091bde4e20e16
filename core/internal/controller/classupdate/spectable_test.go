package classupdate

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

// TestRetryPeriodsFollowTheSpec reads the error table of UpdateMachine in
// docs/driver-api.md (§6.7.4) and checks that the controller waits, after
// each code the table lists, the period the row names, and that every code
// the table does not list is retried as §7.2 says of it (medium, or short
// for the transient ones).
func TestRetryPeriodsFollowTheSpec(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "driver-api.md"))
	require.NoError(t, err)
	text := string(doc)
	start := strings.Index(text, "#### 6.7.4 Errors")
	require.GreaterOrEqual(t, start, 0, "§6.7.4 not found")
	section := text[start:]
	if end := strings.Index(section[1:], "\n#"); end >= 0 {
		section = section[:end+1]
	}

	o := Options{}.withDefaults()
	periods := map[string]time.Duration{"short retry": o.ShortRetry, "medium retry": o.MediumRetry, "long retry": o.LongRetry}
	codeRE := regexp.MustCompile("`([A-Z_]+)`")
	listed := map[codes.Code]bool{}
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.Contains(cells[1], "[R-6.7.4-") {
			continue
		}
		rows++
		var want time.Duration
		for name, d := range periods {
			if strings.Contains(cells[3], name) {
				want = d
			}
		}
		require.NotZero(t, want, "row %q names no retry period", strings.TrimSpace(cells[1]))
		for _, m := range codeRE.FindAllStringSubmatch(cells[2], -1) {
			code, ok := codeByName[m[1]]
			require.True(t, ok, "unknown code %s", m[1])
			listed[code] = true
			assert.Equal(t, want, o.retryAfter(code), "§6.7.4: after %s", m[1])
		}
	}
	require.Equal(t, 11, rows, "§6.7.4 has 11 rows")
	for code := codes.Canceled; code <= codes.Unauthenticated; code++ {
		if listed[code] {
			continue
		}
		want := o.MediumRetry
		if code == codes.Canceled {
			want = o.ShortRetry // §7.2: CANCELLED is a short retry
		}
		assert.Equal(t, want, o.retryAfter(code), "§7.2: after %s, which §6.7.4 does not list", code)
	}
}

// codeByName maps the spec's spelling of a code to the code.
var codeByName = func() map[string]codes.Code {
	out := map[string]codes.Code{}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		var b strings.Builder
		for i, r := range c.String() {
			if i > 0 && r >= 'A' && r <= 'Z' {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		}
		out[strings.ToUpper(b.String())] = c
	}
	out["CANCELLED"] = codes.Canceled
	return out
}()

package conformance

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runTree runs f as the root of a Runner's tree of T and returns the
// report, as Runner.Run does for the suite.
func runTree(r *Runner, f func(t T)) *Report {
	st := &runState{runner: r, report: &Report{}, info: map[string]TestInfo{
		"a": {Name: "a", Section: "§1", Capability: CapabilityRequired},
	}}
	root := &rt{state: st}
	root.runGoroutine(f)
	st.report.SuiteFailures = root.failures
	return st.report
}

func TestRunnerOutcomes(t *testing.T) {
	var order []string
	var mu sync.Mutex
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	rep := runTree(&Runner{}, func(t T) {
		t.Run("a", func(t T) {
			t.Cleanup(func() { note("a cleanup 1") })
			t.Cleanup(func() { note("a cleanup 2") })
			t.Logf("hello %d", 1)
			t.Errorf("first %s", "problem")
			t.Fatalf("fatal")
			note("after fatal") // never runs
		})
		t.Run("skipped", func(t T) {
			t.Skipf("no %s", "reason")
			note("after skip")
		})
		t.Run("passed", func(t T) {
			ok := t.Run("sub", func(t T) { note("sub ran") })
			assert.True(t, ok)
		})
		t.Run("sub failure", func(t T) {
			ok := t.Run("inner", func(t T) { t.Errorf("inner broke") })
			note("parent continues")
			assert.False(t, ok)
			assert.True(t, t.Failed(), "a failed subtest fails its parent")
		})
		t.Run("panics", func(t T) {
			t.Cleanup(func() { note("panic cleanup") })
			panic("boom")
		})
		t.Run("cleanup fatal", func(t T) {
			t.Cleanup(func() { note("second cleanup still runs") })
			t.Cleanup(func() { t.Fatalf("cleanup failed") })
		})
	})
	require.Len(t, rep.Tests, 6)
	byName := map[string]Result{}
	for _, r := range rep.Tests {
		byName[r.Name] = r
	}
	a := byName["a"]
	assert.Equal(t, StatusFailed, a.Status)
	assert.Equal(t, []string{"first problem", "fatal"}, a.Failures)
	assert.Equal(t, []string{"hello 1"}, a.Logs)
	assert.Equal(t, "§1", a.Section, "metadata comes from the registry")
	assert.Equal(t, StatusSkipped, byName["skipped"].Status)
	assert.Equal(t, "no reason", byName["skipped"].SkipReason)
	assert.Equal(t, StatusPassed, byName["passed"].Status)
	sf := byName["sub_failure"]
	assert.Equal(t, StatusFailed, sf.Status, "spaces become underscores as in go test")
	assert.Equal(t, []string{"inner: inner broke"}, sf.Failures, "subtest messages carry the subtest's name")
	p := byName["panics"]
	assert.Equal(t, StatusFailed, p.Status)
	require.Len(t, p.Failures, 1)
	assert.True(t, strings.HasPrefix(p.Failures[0], "panic: boom"), p.Failures[0])
	assert.Equal(t, StatusFailed, byName["cleanup_fatal"].Status)
	assert.Equal(t, []string{
		"a cleanup 2", "a cleanup 1", // last in, first out, after Fatalf
		"sub ran", "parent continues", "panic cleanup", "second cleanup still runs",
	}, order)
}

func TestRunnerFocusAndSkip(t *testing.T) {
	var ran []string
	var progress strings.Builder
	r := &Runner{Focus: mustRegexp(t, "^Group/"), Skip: mustRegexp(t, "slow"), Progress: &progress}
	rep := runTree(r, func(t T) {
		for _, name := range []string{"Group/fast", "Group/slow", "Other/fast"} {
			t.Run(name, func(t T) { ran = append(ran, name) })
		}
	})
	assert.Equal(t, []string{"Group/fast"}, ran)
	assert.Equal(t, 2, rep.Filtered)
	assert.Contains(t, progress.String(), "--- PASS  Group/fast")
	assert.NotContains(t, progress.String(), "Other/fast")
}

func TestRunnerRootFailure(t *testing.T) {
	rep := runTree(&Runner{}, func(t T) { t.Fatalf("cannot reach the driver") })
	assert.Equal(t, []string{"cannot reach the driver"}, rep.SuiteFailures)
	assert.False(t, rep.Passed())
}

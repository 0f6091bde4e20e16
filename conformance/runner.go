package conformance

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// Runner runs the suite without the testing package and records a Result
// per test, for the machina-conformance binary and for tests of the suite
// itself. The zero value runs every test silently.
type Runner struct {
	// Focus, when set, runs only the tests whose name (e.g.
	// "CreateMachine/idempotent") it matches.
	Focus *regexp.Regexp
	// Skip, when set, leaves out the tests whose name it matches.
	Skip *regexp.Regexp
	// Progress receives a line per finished test (and the messages of
	// failed tests). Nil means silent.
	Progress io.Writer
	// Verbose also prints a line when a test starts and the log lines of
	// every test, not only of failed ones.
	Verbose bool
}

// Run runs the suite against cfg and returns its report. When ctx is done,
// the tests that have not started are recorded as skipped; the running test
// and every cleanup (deleting the VMs created so far) still finish.
func (r *Runner) Run(ctx context.Context, cfg Config) *Report {
	st := &runState{runner: r, ctx: ctx, report: &Report{Started: time.Now()}, info: map[string]TestInfo{}}
	for _, ti := range Tests() {
		st.info[ti.Name] = ti
	}
	root := &rt{state: st}
	root.runGoroutine(func(t T) { RunT(t, cfg) })
	st.report.Duration = time.Since(st.report.Started)
	st.report.SuiteFailures = root.failures
	st.report.SuiteLogs = root.logs
	return st.report
}

// runState is shared by all T of one Runner.Run.
type runState struct {
	runner *Runner
	ctx    context.Context
	info   map[string]TestInfo

	mu     sync.Mutex
	report *Report
}

func (s *runState) printf(format string, args ...any) {
	if s.runner.Progress == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.runner.Progress, format, args...)
}

func (s *runState) selected(name string) bool {
	if s.runner.Focus != nil && !s.runner.Focus.MatchString(name) {
		return false
	}
	return s.runner.Skip == nil || !s.runner.Skip.MatchString(name)
}

// rt is the Runner's implementation of T. The tests of the suite are the
// children of the root (depth 1); deeper subtests report into the result of
// their depth-1 ancestor, their messages prefixed with their relative name.
type rt struct {
	state  *runState
	parent *rt
	name   string
	depth  int

	mu         sync.Mutex
	failed     bool
	skipped    bool
	skipReason string
	failures   []string
	logs       []string
	warnings   []string
	cleanups   []func()
}

var _ T = (*rt)(nil)

func (t *rt) Helper()      {}
func (t *rt) Name() string { return t.name }

func (t *rt) Logf(format string, args ...any) {
	t.record(&t.top().logs, fmt.Sprintf(format, args...))
}

func (t *rt) Errorf(format string, args ...any) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	t.record(&t.top().failures, fmt.Sprintf(format, args...))
}

// Warnf records a warning: a broken rule that does not fail the test (see
// warningRules).
func (t *rt) Warnf(format string, args ...any) {
	t.record(&t.top().warnings, fmt.Sprintf(format, args...))
}

func (t *rt) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	runtime.Goexit()
}

func (t *rt) Skipf(format string, args ...any) {
	t.mu.Lock()
	t.skipped = true
	t.skipReason = t.relative(fmt.Sprintf(format, args...))
	t.mu.Unlock()
	runtime.Goexit()
}

func (t *rt) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *rt) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// setDriver records what the suite learned about the driver (see
// driverRecorder).
func (t *rt) setDriver(d DriverInfo) {
	t.state.mu.Lock()
	defer t.state.mu.Unlock()
	t.state.report.Driver = &d
}

// top is the depth-1 ancestor (the suite test) of t, or the root.
func (t *rt) top() *rt {
	top := t
	for top.depth > 1 {
		top = top.parent
	}
	return top
}

// relative prefixes msg with t's name below its depth-1 ancestor.
func (t *rt) relative(msg string) string {
	top := t.top()
	if top == t {
		return msg
	}
	return strings.TrimPrefix(t.name, top.name+"/") + ": " + msg
}

// record appends msg to a list owned by t.top(), under that T's lock.
func (t *rt) record(list *[]string, msg string) {
	top := t.top()
	msg = t.relative(msg)
	top.mu.Lock()
	*list = append(*list, msg)
	top.mu.Unlock()
}

// Run runs f as a subtest. At depth 1 it applies Focus and Skip and writes a
// Result and a progress line.
func (t *rt) Run(name string, f func(t T)) bool {
	name = strings.ReplaceAll(name, " ", "_")
	full := name
	if t.name != "" {
		full = t.name + "/" + name
	}
	child := &rt{state: t.state, parent: t, name: full, depth: t.depth + 1}
	st := t.state
	if child.depth == 1 {
		if !st.selected(full) {
			st.mu.Lock()
			st.report.Filtered++
			st.mu.Unlock()
			return true
		}
		if st.ctx != nil && st.ctx.Err() != nil {
			st.mu.Lock()
			st.report.Interrupted = true
			st.mu.Unlock()
			st.addResult(child.result(0, "interrupted before it started"))
			st.printf("--- SKIP  %s (interrupted)\n", full)
			return true
		}
		if st.runner.Verbose {
			st.printf("=== RUN   %s\n", full)
		}
	}
	start := time.Now()
	child.runGoroutine(f)
	if child.Failed() {
		t.mu.Lock()
		t.failed = true
		t.mu.Unlock()
	}
	if child.depth == 1 {
		res := child.result(time.Since(start), "")
		st.addResult(res)
		st.printResult(res)
	}
	return !child.Failed()
}

// runGoroutine runs f on its own goroutine, as the testing package does, so
// that Fatalf and Skipf (runtime.Goexit) end only this test; then it runs the
// cleanups.
func (t *rt) runGoroutine(f func(t T)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer t.runCleanups()
		defer t.recoverPanic()
		f(t)
	}()
	<-done
}

func (t *rt) recoverPanic() {
	if p := recover(); p != nil {
		t.Errorf("panic: %v\n%s", p, debug.Stack())
	}
}

func (t *rt) runCleanups() {
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return
		}
		f := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		// Each cleanup gets its own goroutine so that a Fatalf inside it
		// ends only that cleanup and the others still run.
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer t.recoverPanic()
			f()
		}()
		<-done
	}
}

func (t *rt) result(d time.Duration, interrupted string) Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	info := t.state.info[t.name]
	res := Result{
		Name:       t.name,
		Section:    info.Section,
		Capability: info.Capability,
		Duration:   d,
		Failures:   t.failures,
		Warnings:   t.warnings,
		Logs:       t.logs,
	}
	switch {
	case interrupted != "":
		res.Status, res.SkipReason = StatusSkipped, interrupted
	case t.failed:
		res.Status = StatusFailed
	case t.skipped:
		res.Status, res.SkipReason = StatusSkipped, t.skipReason
	default:
		res.Status = StatusPassed
	}
	return res
}

func (s *runState) addResult(r Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report.Tests = append(s.report.Tests, r)
}

func (s *runState) printResult(r Result) {
	var b strings.Builder
	switch r.Status {
	case StatusPassed:
		fmt.Fprintf(&b, "--- PASS  %s (%.2fs)\n", r.Name, r.Duration.Seconds())
	case StatusSkipped:
		fmt.Fprintf(&b, "--- SKIP  %s: %s\n", r.Name, r.SkipReason)
	case StatusFailed:
		fmt.Fprintf(&b, "--- FAIL  %s (%.2fs)\n", r.Name, r.Duration.Seconds())
		for _, f := range r.Failures {
			fmt.Fprintf(&b, "      %s\n", indent(f))
		}
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "      WARNING %s\n", indent(w))
	}
	if s.runner.Verbose || r.Status == StatusFailed {
		for _, l := range r.Logs {
			fmt.Fprintf(&b, "      log: %s\n", indent(l))
		}
	}
	s.printf("%s", b.String())
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n        ") }

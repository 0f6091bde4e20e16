package conformance

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Status is the outcome of one test.
type Status string

// The outcomes of a test.
const (
	StatusPassed  Status = "passed"
	StatusFailed  Status = "failed"
	StatusSkipped Status = "skipped"
)

// CapabilityRequired is the capability of tests that every driver must pass
// (the REQUIRED RPCs and the general rules).
const CapabilityRequired = "REQUIRED"

// Result is the outcome of one suite test.
type Result struct {
	// Name is the test's name, e.g. "CreateMachine/idempotent".
	Name string `json:"name"`
	// Section is the Driver API section the test checks, e.g. "§6.1".
	Section string `json:"section"`
	// Capability is CapabilityRequired or the capability the test needs,
	// e.g. "TYPE_LIST_MACHINES".
	Capability string        `json:"capability"`
	Status     Status        `json:"status"`
	Duration   time.Duration `json:"durationNanos"`
	// Failures holds one message per broken rule, each naming the rule and
	// its section.
	Failures []string `json:"failures,omitempty"`
	// SkipReason says why a skipped test did not run.
	SkipReason string `json:"skipReason,omitempty"`
	// Warnings holds one message per rule the test found broken whose
	// breach does not fail it (a SHOULD, or a check new in this version of
	// the suite, Driver API §3.2). Warnings never fail a test.
	Warnings []string `json:"warnings,omitempty"`
	// Logs holds what the test logged.
	Logs []string `json:"logs,omitempty"`
}

// DriverInfo is what the suite learned about the driver before the tests.
type DriverInfo struct {
	Name         string            `json:"name"`
	Version      string            `json:"vendorVersion"`
	Manifest     map[string]string `json:"manifest,omitempty"`
	Capabilities []string          `json:"capabilities"`
}

// Report is the outcome of a Runner.Run.
type Report struct {
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"durationNanos"`
	// Driver is nil when the suite could not reach the driver.
	Driver *DriverInfo `json:"driver,omitempty"`
	Tests  []Result    `json:"tests"`
	// Filtered counts the tests left out by Focus and Skip.
	Filtered int `json:"filtered"`
	// Interrupted is true when the run was stopped before every selected
	// test ran; such a run never passes.
	Interrupted bool `json:"interrupted,omitempty"`
	// SuiteFailures are failures outside any test: an unusable Config, an
	// unreachable driver, or a VM left behind at the end.
	SuiteFailures []string `json:"suiteFailures,omitempty"`
	// SuiteLogs are log lines outside any test.
	SuiteLogs []string `json:"suiteLogs,omitempty"`
}

// Counts are the numbers of tests per outcome.
type Counts struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

func (c *Counts) add(s Status) {
	switch s {
	case StatusPassed:
		c.Passed++
	case StatusFailed:
		c.Failed++
	case StatusSkipped:
		c.Skipped++
	}
}

// Passed reports whether the run completed and no test and nothing outside
// a test failed.
func (r *Report) Passed() bool {
	return !r.Interrupted && len(r.SuiteFailures) == 0 && r.Counts().Failed == 0
}

// Counts totals the outcomes of all tests.
func (r *Report) Counts() Counts {
	var c Counts
	for _, t := range r.Tests {
		c.add(t.Status)
	}
	return c
}

// ByCapability totals the outcomes per capability (CapabilityRequired for
// the tests every driver must pass).
func (r *Report) ByCapability() map[string]Counts {
	out := map[string]Counts{}
	for _, t := range r.Tests {
		c := out[t.Capability]
		c.add(t.Status)
		out[t.Capability] = c
	}
	return out
}

// Result returns the result of the named test and whether it ran.
func (r *Report) Result(name string) (Result, bool) {
	for _, t := range r.Tests {
		if t.Name == name {
			return t, true
		}
	}
	return Result{}, false
}

// jsonReport is the document WriteJSON writes.
type jsonReport struct {
	*Report
	Passed       bool              `json:"passed"`
	Totals       Counts            `json:"totals"`
	ByCapability map[string]Counts `json:"byCapability"`
}

// WriteJSON writes the report as one JSON document: the driver, totals,
// totals per capability and every test with its outcome and messages.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonReport{Report: r, Passed: r.Passed(), Totals: r.Counts(), ByCapability: r.ByCapability()})
}

// The JUnit XML shapes, as understood by CI systems (Jenkins, GitLab,
// GitHub test reporters).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML: one test suite, one test case
// per test (classname is the group, e.g. "CreateMachine"), and a test case
// "suite" when something failed outside any test.
func (r *Report) WriteJUnit(w io.Writer) error {
	c := r.Counts()
	s := junitSuite{
		Name:      "machina-conformance",
		Tests:     len(r.Tests),
		Failures:  c.Failed,
		Skipped:   c.Skipped,
		Time:      seconds(r.Duration),
		Timestamp: r.Started.UTC().Format(time.RFC3339),
	}
	if d := r.Driver; d != nil {
		s.Properties = []junitProperty{
			{Name: "driver.name", Value: d.Name},
			{Name: "driver.vendorVersion", Value: d.Version},
			{Name: "driver.capabilities", Value: strings.Join(d.Capabilities, ",")},
		}
	}
	for _, t := range r.Tests {
		group, _, _ := strings.Cut(t.Name, "/")
		jc := junitCase{
			Name:      fmt.Sprintf("%s [%s]", t.Name, t.Section),
			Classname: group,
			Time:      seconds(t.Duration),
			SystemOut: strings.Join(t.Logs, "\n"),
		}
		switch t.Status {
		case StatusFailed:
			jc.Failure = &junitMessage{Message: firstLine(t.Failures), Body: strings.Join(t.Failures, "\n")}
		case StatusSkipped:
			jc.Skipped = &junitMessage{Message: t.SkipReason}
		}
		s.Cases = append(s.Cases, jc)
	}
	if len(r.SuiteFailures) > 0 {
		s.Tests++
		s.Failures++
		s.Cases = append(s.Cases, junitCase{
			Name: "suite", Classname: "suite", Time: "0",
			Failure: &junitMessage{Message: firstLine(r.SuiteFailures), Body: strings.Join(r.SuiteFailures, "\n")},
		})
	}
	doc := junitSuites{Tests: s.Tests, Failures: s.Failures, Skipped: s.Skipped, Time: s.Time, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteSummary writes a human-readable summary: the driver, totals per
// capability, and every failed test with its messages.
func (r *Report) WriteSummary(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "machina-conformance summary")
	if d := r.Driver; d != nil {
		caps := strings.Join(d.Capabilities, ", ")
		if caps == "" {
			caps = "none"
		}
		fmt.Fprintf(w, "  %-25s %s %s\n  %-25s %s\n", "driver:", d.Name, d.Version, "capabilities:", caps)
	}
	byCap := r.ByCapability()
	keys := make([]string, 0, len(byCap))
	for k := range byCap {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		// REQUIRED first, then the capabilities by name.
		if (keys[i] == CapabilityRequired) != (keys[j] == CapabilityRequired) {
			return keys[i] == CapabilityRequired
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		c := byCap[k]
		fmt.Fprintf(w, "  %-25s %3d passed, %3d failed, %3d skipped\n", k+":", c.Passed, c.Failed, c.Skipped)
	}
	c := r.Counts()
	fmt.Fprintf(w, "  %-25s %3d passed, %3d failed, %3d skipped", "total:", c.Passed, c.Failed, c.Skipped)
	if r.Filtered > 0 {
		fmt.Fprintf(w, " (%d not selected)", r.Filtered)
	}
	fmt.Fprintf(w, " in %.1fs\n", r.Duration.Seconds())
	if len(r.SuiteFailures) > 0 {
		fmt.Fprintln(w, "\nsuite failures:")
		for _, f := range r.SuiteFailures {
			fmt.Fprintf(w, "  - %s\n", indent(f))
		}
	}
	if c.Failed > 0 {
		fmt.Fprintln(w, "\nfailed tests:")
		for _, t := range r.Tests {
			if t.Status != StatusFailed {
				continue
			}
			fmt.Fprintf(w, "  %s [%s]\n", t.Name, t.Section)
			for _, f := range t.Failures {
				fmt.Fprintf(w, "    - %s\n", indent(f))
			}
		}
	}
	if n := r.WarningCount(); n > 0 {
		fmt.Fprintf(w, "\nwarnings (%d; they do not fail the run):\n", n)
		for _, t := range r.Tests {
			if len(t.Warnings) == 0 {
				continue
			}
			fmt.Fprintf(w, "  %s [%s]\n", t.Name, t.Section)
			for _, m := range t.Warnings {
				fmt.Fprintf(w, "    - %s\n", indent(m))
			}
		}
	}
	switch {
	case r.Interrupted && r.Counts().Failed == 0 && len(r.SuiteFailures) == 0:
		fmt.Fprintln(w, "\nRESULT: INTERRUPTED (not every test ran)")
	case r.Passed():
		fmt.Fprintln(w, "\nRESULT: PASS")
	default:
		fmt.Fprintln(w, "\nRESULT: FAIL")
	}
}

// WarningCount is the number of warnings of all tests.
func (r *Report) WarningCount() int {
	n := 0
	for _, t := range r.Tests {
		n += len(t.Warnings)
	}
	return n
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func firstLine(msgs []string) string {
	if len(msgs) == 0 {
		return ""
	}
	line, _, _ := strings.Cut(msgs[0], "\n")
	return line
}

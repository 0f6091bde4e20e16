// Command machina-conformance runs the machina Driver API conformance suite
// against a driver that is already running, or that it starts itself
// (--driver-command, the launcher mode). See docs/conformance.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"

	"github.com/machina-io/machina/conformance"
)

// Exit codes.
const (
	exitPassed = 0
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command, apart from the process: it returns the exit
// code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, getenv, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitPassed
	case err != nil:
		fmt.Fprintf(stderr, "machina-conformance: %v\nRun machina-conformance -h for the flags.\n", err)
		return exitUsage
	}
	if o.list {
		listTests(stdout, o)
		return exitPassed
	}
	o.runner.Progress = stdout
	if o.cfg.Launch != nil {
		fmt.Fprintf(stdout, "machina-conformance: starting the driver: %s\n", o.cfg.Launch.Command)
	} else {
		fmt.Fprintf(stdout, "machina-conformance: checking the driver at %s\n", o.cfg.Endpoint)
	}
	// The runner stops starting tests when ctx is done; the running test
	// and the cleanups (deleting VMs) still finish.
	stopNotice := context.AfterFunc(ctx, func() {
		fmt.Fprintln(stderr, "machina-conformance: interrupted; finishing the running test and deleting the VMs created so far")
	})
	defer stopNotice()
	rep := o.runner.Run(ctx, o.cfg)
	rep.WriteSummary(stdout)

	code := exitPassed
	if !rep.Passed() {
		code = exitFailed
	}
	if o.junit != "" {
		if err := writeFile(o.junit, rep.WriteJUnit); err != nil {
			fmt.Fprintf(stderr, "machina-conformance: --junit-report: %v\n", err)
			code = exitFailed
		}
	}
	if o.json != "" {
		if err := writeFile(o.json, rep.WriteJSON); err != nil {
			fmt.Fprintf(stderr, "machina-conformance: --json-report: %v\n", err)
			code = exitFailed
		}
	}
	return code
}

// listTests prints the tests the flags select, with their sections.
func listTests(w io.Writer, o *options) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TEST\tSECTION\tCAPABILITY\tCHECKS")
	for _, t := range conformance.Tests() {
		if (o.runner.Focus != nil && !o.runner.Focus.MatchString(t.Name)) ||
			(o.runner.Skip != nil && o.runner.Skip.MatchString(t.Name)) {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Section, t.Capability, t.Checks)
	}
	_ = tw.Flush()
}

// writeFile writes a report to path through write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

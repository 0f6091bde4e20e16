package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/machina-io/machina/core/manager"
)

// config is the parsed command line.
type config struct {
	opts        manager.Options
	zap         zap.Options
	verbosity   int
	vSet        bool
	showVersion bool
}

// parseFlags parses args into a config. On -h it prints the usage to out
// and returns flag.ErrHelp.
func parseFlags(args []string, out io.Writer) (*config, error) {
	c := &config{opts: manager.DefaultOptions()}
	fs := flag.NewFlagSet("machina-manager", flag.ContinueOnError)
	fs.SetOutput(out)
	c.opts.AddFlags(fs)
	// Production logs: JSON, info level, no stack traces below error.
	c.zap.Development = false
	c.zap.BindFlags(fs)
	fs.IntVar(&c.verbosity, "v", 0,
		"log verbosity, as in Kubernetes components (2 and up show per-object detail); overrides --zap-log-level")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: machina-manager [flags]\n\nFlags (-flag and --flag are the same):\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "v" {
			c.vSet = true
		}
	})
	if c.vSet && (c.verbosity < 0 || c.verbosity > 127) {
		return nil, fmt.Errorf("--v must be between 0 and 127, got %d", c.verbosity)
	}
	return c, nil
}

// logger builds the process logger (controller-runtime's zap) writing to w.
// --v=N maps to logr's V(N): zap level -N.
func (c *config) logger(w io.Writer) logr.Logger {
	opts := c.zap
	opts.DestWriter = w
	if c.vSet {
		opts.Level = zapcore.Level(-int8(c.verbosity))
	}
	return zap.New(zap.UseFlagOptions(&opts))
}

// setupKlog routes client-go's klog output (leader election, reflectors)
// into the same structured logger.
func setupKlog(logger logr.Logger) {
	klog.SetLogger(logger.WithName("client-go"))
}

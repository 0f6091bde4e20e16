// Command brokendriver is the inmemory driver with one process-level rule of
// the Driver API (§2.2, §2.7) broken on purpose, chosen by --break. The
// launcher mode of the conformance suite must catch each
// (cmd/machina-conformance/launcher_test.go); with --break none it is a
// correct driver.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/machina-io/machina/drivers/inmemory"
	"github.com/machina-io/machina/sdk"
)

// The breakages.
const (
	breakNone          = "none"
	breakLeaveSocket   = "leave-socket"   // leaves a socket file behind when it exits
	breakRemoveFile    = "remove-file"    // removes whatever non-socket file is at its path
	breakIgnoreSIGTERM = "ignore-sigterm" // goes on serving after SIGTERM
	breakEnvOverFlag   = "env-over-flag"  // prefers MACHINA_DRIVER_ENDPOINT to --endpoint
	breakKeepStale     = "keep-stale"     // refuses to start when any file is at its path
	breakTakeOver      = "take-over"      // removes any socket at its path, served or not
	breakOpenDir       = "open-dir"       // creates the socket directory readable by others
	breakHardStop      = "hard-stop"      // exits at once on SIGTERM, cutting calls in flight
	breakChmodDir      = "chmod-dir"      // changes the mode of an existing socket directory
	breakSilentRefusal = "silent-refusal" // refuses an endpoint it cannot serve without naming it
	breakRelativePath  = "relative-path"  // serves a relative unix:// path (from its working directory)
	breakExtraFile     = "extra-file"     // writes a lock file next to its socket
	breakTCPFallback   = "tcp-fallback"   // serves on TCP when it cannot listen on its socket
	breakNewIDs        = "new-ids"        // gives the VMs it finds at start new provider IDs
)

var breakages = []string{breakNone, breakLeaveSocket, breakRemoveFile, breakIgnoreSIGTERM,
	breakEnvOverFlag, breakKeepStale, breakTakeOver, breakOpenDir, breakHardStop, breakChmodDir,
	breakSilentRefusal, breakRelativePath, breakExtraFile, breakTCPFallback, breakNewIDs}

func main() {
	endpoint := flag.String("endpoint", "", "Driver API endpoint (default from "+sdk.EndpointEnv+", else "+sdk.DefaultEndpoint+")")
	breakage := flag.String("break", breakNone, "the rule to break: "+strings.Join(breakages, ", "))
	faults := flag.String("fault", "", "faults to inject, as the inmemory driver's --fault")
	stateFile := flag.String("state-file", "", "JSON file that keeps the VMs across restarts")
	flag.Parse()
	if err := run(*endpoint, *breakage, *faults, *stateFile); err != nil {
		if *breakage == breakSilentRefusal {
			fmt.Fprintln(os.Stderr, "brokendriver: cannot start")
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "brokendriver: %v\n", err)
		os.Exit(1)
	}
}

func run(endpoint, breakage, faults, stateFile string) error {
	if env := os.Getenv(sdk.EndpointEnv); endpoint == "" || (breakage == breakEnvOverFlag && env != "") {
		endpoint = env
	}
	if endpoint == "" {
		endpoint = sdk.DefaultEndpoint
	}
	if breakage == breakNewIDs && stateFile != "" {
		if err := renumber(stateFile); err != nil {
			return err
		}
	}
	opts := inmemory.Options{StateFile: stateFile}
	if faults != "" {
		f, err := inmemory.ParseFaults(faults)
		if err != nil {
			return err
		}
		opts.Faults = f
	}
	d, err := inmemory.Open(opts)
	if err != nil {
		return err
	}
	s, err := sdk.NewServer(inmemory.Info(""), d, d.SDKOptions()...)
	if err != nil {
		return err
	}
	path := strings.TrimPrefix(endpoint, "unix://")
	signals := []os.Signal{syscall.SIGTERM, syscall.SIGINT}
	switch breakage {
	case breakNone, breakLeaveSocket, breakEnvOverFlag, breakSilentRefusal, breakTCPFallback, breakNewIDs:
	case breakRelativePath:
		if strings.HasPrefix(endpoint, "unix://") && !filepath.IsAbs(path) {
			abs, err := filepath.Abs(path)
			if err != nil {
				return err
			}
			endpoint, path = "unix://"+abs, abs
		}
	case breakExtraFile:
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(path), "driver.lock"), []byte("locked\n"), 0o600); err != nil {
			return err
		}
	case breakKeepStale:
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("%s exists", path)
		}
	case breakTakeOver:
		if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() == fs.ModeSocket {
			if err := os.Remove(path); err != nil {
				return err
			}
		}
	case breakOpenDir:
		if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
			return err
		}
	case breakChmodDir:
		if err := os.Chmod(filepath.Dir(path), 0o700); err != nil {
			return err
		}
	case breakHardStop:
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		go func() {
			<-term
			os.Exit(0)
		}()
		signals = []os.Signal{syscall.SIGINT}
	case breakRemoveFile:
		if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() != fs.ModeSocket {
			if err := os.RemoveAll(path); err != nil {
				return err
			}
		}
	case breakIgnoreSIGTERM:
		signal.Ignore(syscall.SIGTERM)
		signals = []os.Signal{syscall.SIGINT}
	default:
		return fmt.Errorf("unknown --break %q", breakage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), signals...)
	defer stop()
	if err := s.Serve(ctx, endpoint); err != nil {
		if breakage != breakTCPFallback {
			return err
		}
		fmt.Fprintf(os.Stderr, "brokendriver: %v; serving on TCP instead\n", err)
		fallback, err := sdk.NewServer(inmemory.Info(""), d, d.SDKOptions()...)
		if err != nil {
			return err
		}
		if err := fallback.Serve(ctx, "tcp://127.0.0.1:0"); err != nil {
			return err
		}
	}
	if breakage == breakLeaveSocket {
		// A socket file nobody serves, as if the driver had not removed
		// its own.
		lis, err := net.Listen("unix", path)
		if err != nil {
			return errors.Join(errors.New("leaving a socket behind"), err)
		}
		lis.(*net.UnixListener).SetUnlinkOnClose(false)
		return lis.Close()
	}
	return nil
}

// renumber gives every VM of the state file a new provider ID, as a driver
// that numbers VMs per process would after a restart.
func renumber(stateFile string) error {
	b, err := os.ReadFile(stateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var vms []map[string]any
	if err := json.Unmarshal(b, &vms); err != nil {
		return err
	}
	for _, vm := range vms {
		if id, ok := vm["providerID"].(string); ok {
			vm["providerID"] = id + "-restarted"
		}
	}
	if b, err = json.Marshal(vms); err != nil {
		return err
	}
	return os.WriteFile(stateFile, b, 0o600)
}

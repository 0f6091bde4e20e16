// Command brokendriver is the inmemory driver with one process-level rule of
// the Driver API (§2.1, §2.2, §2.3, §2.7) broken on purpose, chosen by --break. The
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
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

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
	breakIgnoreFlag    = "ignore-flag"    // ignores the socket name --endpoint gives (serves driver.sock in its directory); else the variable
	breakIgnoreEnv     = "ignore-env"     // ignores MACHINA_DRIVER_ENDPOINT: the flag, else a socket of its own in os.TempDir()
	breakChownDir      = "chown-dir"      // gives an existing socket directory another owner (65534:65534), keeping its mode
	breakLateChmod     = "late-chmod"     // serves with its socket at mode 0666, made 0600 only seconds after its first call
	breakTCPAlways     = "tcp-always"     // also serves on tcp://127.0.0.1:0, beside its socket
	breakServeAnyway   = "serve-anyway"   // with a non-socket file at its path, keeps it and serves on path+".alt"
)

// otherOwner is the uid and gid chown-dir gives the socket directory
// (nobody, nogroup).
const otherOwner = 65534

// lateChmodDelay is how long after its first call late-chmod fixes its
// socket's mode.
const lateChmodDelay = 3 * time.Second

var breakages = []string{breakNone, breakLeaveSocket, breakRemoveFile, breakIgnoreSIGTERM,
	breakEnvOverFlag, breakKeepStale, breakTakeOver, breakOpenDir, breakHardStop, breakChmodDir,
	breakSilentRefusal, breakRelativePath, breakExtraFile, breakTCPFallback, breakNewIDs,
	breakIgnoreFlag, breakIgnoreEnv, breakChownDir, breakLateChmod, breakTCPAlways, breakServeAnyway}

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
	env := os.Getenv(sdk.EndpointEnv)
	switch breakage {
	case breakIgnoreFlag:
		// The flag's path is not taken as given: a socket named
		// driver.sock in its directory (so the suite's own start, on a
		// driver.sock, still works), else the variable.
		if strings.HasPrefix(endpoint, "unix://") {
			endpoint = "unix://" + filepath.Join(filepath.Dir(strings.TrimPrefix(endpoint, "unix://")), "driver.sock")
		} else {
			endpoint = env
		}
	case breakIgnoreEnv:
	default:
		if endpoint == "" || (breakage == breakEnvOverFlag && env != "") {
			endpoint = env
		}
	}
	if endpoint == "" {
		endpoint = sdk.DefaultEndpoint
		if breakage == breakIgnoreFlag || breakage == breakIgnoreEnv {
			// A socket of its own, not the machine's shared default.
			endpoint = "unix://" + filepath.Join(os.TempDir(), fmt.Sprintf("brokendriver-%d.sock", os.Getpid()))
		}
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
	case breakNone, breakLeaveSocket, breakEnvOverFlag, breakSilentRefusal, breakTCPFallback, breakNewIDs,
		breakIgnoreFlag, breakIgnoreEnv, breakTCPAlways, breakLateChmod:
	case breakServeAnyway:
		if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() != fs.ModeSocket {
			endpoint, path = endpoint+".alt", path+".alt"
		}
	case breakChownDir:
		if _, err := os.Stat(filepath.Dir(path)); err == nil {
			if err := os.Chown(filepath.Dir(path), otherOwner, otherOwner); err != nil {
				return err
			}
		}
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
	switch breakage {
	case breakLateChmod:
		return serveLateChmod(ctx, d, path)
	case breakTCPAlways:
		tcp, err := sdk.NewServer(inmemory.Info(""), d, d.SDKOptions()...)
		if err != nil {
			return err
		}
		tcpCtx, cancel := context.WithCancel(ctx)
		tcpDone := make(chan error, 1)
		go func() { tcpDone <- tcp.Serve(tcpCtx, "tcp://127.0.0.1:0") }()
		defer func() { cancel(); <-tcpDone }()
	}
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

// serveLateChmod serves on path through a proxy: the SDK's server listens
// on a socket of its own in os.TempDir(), the process on path with mode
// 0666, made 0600 only lateChmodDelay after the first connection was
// accepted (and so after the first call can be answered).
func serveLateChmod(ctx context.Context, d *inmemory.Driver, path string) error {
	inner := filepath.Join(os.TempDir(), fmt.Sprintf("brokendriver-%d-inner.sock", os.Getpid()))
	s, err := sdk.NewServer(inmemory.Info(""), d, d.SDKOptions()...)
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, "unix://"+inner) }()
	lis, err := sdk.Listen("unix://" + path)
	if err != nil {
		return errors.Join(err, <-served)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		_ = lis.Close()
		return err
	}
	go func() {
		<-ctx.Done()
		_ = lis.Close()
	}()
	var once sync.Once
	for {
		c, err := lis.Accept()
		if err != nil {
			break
		}
		once.Do(func() {
			time.AfterFunc(lateChmodDelay, func() { _ = os.Chmod(path, 0o600) })
		})
		go proxy(c, inner)
	}
	return <-served
}

// proxy copies between c and a new connection to the socket at inner.
func proxy(c net.Conn, inner string) {
	defer func() { _ = c.Close() }()
	var u net.Conn
	var err error
	for range 100 { // the inner server may not listen yet
		if u, err = net.Dial("unix", inner); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return
	}
	defer func() { _ = u.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
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

package process

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests start this test binary again as the child, in the mode named by
// childModeEnv (see runChild): real processes, no stand-ins.
const childModeEnv = "MACHINA_PROCESS_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		runChild(mode)
		return
	}
	os.Exit(m.Run())
}

// runChild is the child's side of the tests.
func runChild(mode string) {
	switch mode {
	case "exit3":
		for i := 1; i <= 10; i++ {
			fmt.Printf("line %d\n", i)
		}
		fmt.Fprintln(os.Stderr, "to stderr")
		os.Exit(3)
	case "env":
		fmt.Println("X=" + os.Getenv("X"))
	case "sleep":
		fmt.Println("sleeping")
		select {}
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
		select {}
	case "term-exits-0":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		fmt.Println("waiting for SIGTERM")
		<-c
		fmt.Println("got SIGTERM")
		os.Exit(0)
	case "grandchild":
		// A child of its own, in this process's group, that nobody stops;
		// its output goes to the same log.
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), childModeEnv+"=term-exits-0")
		cmd.Stdout = os.Stdout
		if err := cmd.Start(); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Printf("grandchild %d\n", cmd.Process.Pid)
		select {}
	case "serve":
		l, err := net.Listen("tcp", os.Getenv("ADDR"))
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("serving")
		mux := http.NewServeMux()
		mux.HandleFunc("/ready", func(http.ResponseWriter, *http.Request) {})
		mux.HandleFunc("/not-ready", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
		_ = http.Serve(l, mux)
	case "parent":
		// Starts a child with this package and then waits to be killed.
		child, err := Start(Config{Name: "child", Path: os.Args[0], Env: append(os.Environ(), childModeEnv+"=sleep"), LogPath: os.Getenv("CHILD_LOG"), Group: true})
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Printf("child %d\n", child.Pid())
		select {}
	}
}

// start starts the test binary in mode with extra environment variables,
// and stops it when the test ends.
func start(t *testing.T, mode string, cfg Config, env ...string) *Process {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = mode
	}
	if cfg.LogPath == "" && cfg.Output == nil {
		cfg.LogPath = filepath.Join(t.TempDir(), mode+".log")
	}
	cfg.Path = os.Args[0]
	cfg.Env = append(append(os.Environ(), childModeEnv+"="+mode), env...)
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	return p
}

// waitLog waits until the log of p holds want, and returns the log.
func waitLog(t *testing.T, p *Process, want string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(p.LogPath())
		if strings.Contains(string(data), want) {
			return string(data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q not in the log of %s within 20s; log:\n%s", want, p.Name(), data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitExited waits until p has exited.
func waitExited(t *testing.T, p *Process) {
	t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not exit within 20s", p.Name())
	}
}

func TestOutputGoesToTheLog(t *testing.T) {
	p := start(t, "exit3", Config{})
	waitExited(t, p)
	if p.Running() {
		t.Fatal("Running after exit")
	}
	if got := p.ExitCode(); got != 3 {
		t.Fatalf("exit code %d, want 3", got)
	}
	var exitErr *exec.ExitError
	if !errors.As(p.Err(), &exitErr) {
		t.Fatalf("Err() = %v, want an *exec.ExitError", p.Err())
	}
	if got, want := p.Tail(3), "    line 9\n    line 10\n    to stderr"; got != want {
		t.Fatalf("Tail(3) = %q, want %q", got, want)
	}
	msg := p.ExitError(2).Error()
	for _, want := range []string{"exit3 exited unexpectedly (exit status 3)", p.LogPath(), "    line 10\n    to stderr"} {
		if !strings.Contains(msg, want) {
			t.Errorf("ExitError %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "line 9") {
		t.Errorf("ExitError(2) %q shows more than two lines", msg)
	}
	// Stopping a process that has exited is no error.
	if err := p.Stop(time.Second); err != nil {
		t.Fatalf("Stop after exit: %v", err)
	}
}

func TestOutputGoesToTheBuffer(t *testing.T) {
	out := &Buffer{}
	p := start(t, "exit3", Config{Output: out})
	waitExited(t, p)
	if got := p.ExitCode(); got != 3 {
		t.Fatalf("exit code %d, want 3", got)
	}
	// Both streams are in the buffer once the process has exited: Wait
	// returns after the copying goroutines are done.
	if got := out.String(); !strings.HasPrefix(got, "line 1\n") || !strings.Contains(got, "line 10\n") || !strings.Contains(got, "to stderr\n") {
		t.Fatalf("buffer %q lacks the child's stdout or stderr", got)
	}
	if got, want := p.Tail(2), "    line 10\n    to stderr"; got != want {
		t.Fatalf("Tail(2) = %q, want %q", got, want)
	}
	if p.LogPath() != "" {
		t.Fatalf("LogPath() = %q with Output, want \"\"", p.LogPath())
	}
	msg := p.ExitError(1).Error()
	if want := "exit3 exited unexpectedly (exit status 3); last lines of its output:\n    to stderr"; msg != want {
		t.Fatalf("ExitError = %q, want %q", msg, want)
	}
}

// TestBufferedKillWithAGrandchildHoldingTheOutput: a child whose own child
// keeps the output pipe open still counts as exited once it is killed, so
// Kill and Stop return.
func TestBufferedKillWithAGrandchildHoldingTheOutput(t *testing.T) {
	out := &Buffer{}
	p := start(t, "grandchild", Config{Output: out})
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "grandchild ") {
		if time.Now().After(deadline) {
			t.Fatalf("the grandchild was not started within 20s; output:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var pid int
	_, line, _ := strings.Cut(out.String(), "grandchild ") // there: the loop above waited for it
	if _, err := fmt.Sscanf(line, "%d", &pid); err != nil {
		t.Fatal(err)
	}
	// Killed here: nothing gave the grandchild a parent-death signal.
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	done := make(chan struct{})
	go func() {
		p.Kill()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Kill did not return within 20s while a grandchild held the output open")
	}
	if syscall.Kill(pid, 0) != nil {
		t.Fatal("the grandchild is gone: the test did not keep the pipe open")
	}
}

func TestLogIsTruncatedOrAppended(t *testing.T) {
	log := filepath.Join(t.TempDir(), "shared.log")
	for _, appendLog := range []bool{true, true, false} {
		waitExited(t, start(t, "env", Config{LogPath: log, AppendLog: appendLog}, "X=run"))
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(data), "X=run\n"); got != 1 {
		t.Fatalf("a run without AppendLog left %d lines, want 1:\n%s", got, data)
	}
	waitExited(t, start(t, "env", Config{LogPath: log, AppendLog: true}, "X=second"))
	data, err = os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), "X=run\nX=second\n"; got != want {
		t.Fatalf("log %q, want %q", got, want)
	}
}

func TestStopWithSIGTERM(t *testing.T) {
	p := start(t, "term-exits-0", Config{})
	waitLog(t, p, "waiting for SIGTERM")
	begin := time.Now()
	if err := p.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Running() || p.ExitCode() != 0 {
		t.Fatalf("after Stop: running %v, exit code %d; want exited with 0", p.Running(), p.ExitCode())
	}
	waitLog(t, p, "got SIGTERM")
	if took := time.Since(begin); took > 10*time.Second {
		t.Fatalf("Stop took %s for a process that exits on SIGTERM", took)
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	p := start(t, "ignore-term", Config{Group: true})
	waitLog(t, p, "ignoring SIGTERM")
	begin := time.Now()
	err := p.Stop(300 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not stop within 300ms of SIGTERM and was killed") {
		t.Fatalf("Stop = %v, want the kill reported", err)
	}
	if took := time.Since(begin); took < 300*time.Millisecond {
		t.Fatalf("Stop returned after %s, before the grace of 300ms", took)
	}
	if p.Running() {
		t.Fatal("still running after Stop")
	}
	var exitErr *exec.ExitError
	if !errors.As(p.Err(), &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("Err() = %v, want killed by SIGKILL", p.Err())
	}
}

func TestWaitHTTP(t *testing.T) {
	addr := freeAddress(t)
	p := start(t, "serve", Config{}, "ADDR="+addr)
	ctx := t.Context()
	if err := WaitHTTP(ctx, "http://"+addr+"/ready", 20*time.Second, 20*time.Millisecond, p); err != nil {
		t.Fatal(err)
	}
	ok, status, err := ProbeHTTP(ctx, "http://"+addr+"/not-ready")
	if ok || status != "503 Service Unavailable" || err != nil {
		t.Fatalf("ProbeHTTP of a 503 = %v, %q, %v", ok, status, err)
	}

	// A url that never answers 200 fails after the timeout, with the log.
	err = WaitHTTP(ctx, "http://"+addr+"/not-ready", 300*time.Millisecond, 20*time.Millisecond, p)
	if err == nil || !strings.Contains(err.Error(), "did not answer 200 on http://"+addr+"/not-ready within 300ms (last: 503 Service Unavailable)") ||
		!strings.Contains(err.Error(), "    serving") {
		t.Fatalf("WaitHTTP of a 503 = %v", err)
	}

	// A watched process that exits ends the wait at once, with its log.
	other := start(t, "exit3", Config{})
	begin := time.Now()
	err = WaitHTTP(ctx, "http://"+addr+"/not-ready", time.Minute, 20*time.Millisecond, p, other)
	if err == nil || !strings.Contains(err.Error(), "exit3 exited unexpectedly (exit status 3)") {
		t.Fatalf("WaitHTTP with an exited process = %v", err)
	}
	if took := time.Since(begin); took > 30*time.Second {
		t.Fatalf("WaitHTTP took %s to see an exited process", took)
	}
}

func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestStartFails(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(Config{Name: "missing", Path: filepath.Join(dir, "no-such-binary"), LogPath: filepath.Join(dir, "log")})
	if err == nil || !strings.HasPrefix(err.Error(), "starting missing: ") {
		t.Fatalf("Start of a missing binary = %v", err)
	}
	_, err = Start(Config{Name: "nolog", Path: os.Args[0], LogPath: filepath.Join(dir, "no-such-dir", "log")})
	if err == nil || !strings.HasPrefix(err.Error(), "starting nolog: ") {
		t.Fatalf("Start with a log in a missing directory = %v", err)
	}
}

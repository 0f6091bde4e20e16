package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// The Launcher checks of how a driver refuses an endpoint it cannot serve,
// and of what it leaves next to its socket (§2.1, §2.2).

// testLaunchBadEndpoint starts the driver with an endpoint of another
// scheme and with a unix:// endpoint whose path is relative: it must refuse
// to start, with a message naming the value (§2.1).
func testLaunchBadEndpoint(s *suite, t T) {
	l := needLaunch(s, t)
	// A relative path resolves against the driver's working directory,
	// which is the suite's: a driver that accepts it would listen there.
	// The name is the run's own, so that nothing of the caller's is hit.
	rel := filepath.Join("machina-conformance-"+filepath.Base(l.newDir(t)), "driver.sock")
	top := filepath.Dir(rel)
	if _, err := os.Lstat(top); err == nil {
		ruleIdentityOK.fatalf(t, "%s exists in the working directory; the check would not know what the driver made", top)
	}
	defer func() { _ = os.RemoveAll(top) }()
	abs, err := filepath.Abs(rel)
	if err != nil {
		ruleIdentityOK.fatalf(t, "cannot resolve %s: %v", rel, err)
	}
	for _, c := range []struct{ value, what, probe string }{
		{"http://127.0.0.1:1/driver.sock", "an endpoint of another scheme", unixEndpoint(filepath.Join(l.newDir(t), "never.sock"))},
		{"unix://" + rel, "a unix:// endpoint with a relative path", unixEndpoint(abs)},
	} {
		p := l.start(t, []string{"--endpoint", c.value}, "")
		switch l.waitAnswerOrExit(p, c.probe) {
		case answered:
			ruleLaunchBadEndpoint.errorf(t, "started with %s (--endpoint %s), the driver serves on %s", c.what, c.value, c.probe)
		case silent:
			ruleLaunchBadEndpoint.errorf(t, "started with %s (--endpoint %s), the driver neither exited within %v; %s", c.what, c.value, l.ready, p.tail())
		case exited:
			switch {
			case p.exitCode() == 0:
				ruleLaunchBadEndpoint.errorf(t, "started with %s (--endpoint %s), the driver exited with status 0: refusing to start is a non-zero status", c.what, c.value)
			case !strings.Contains(p.out.String(), c.value):
				ruleLaunchBadEndpoint.errorf(t, "started with %s, the driver exited with status %d without naming the value %s; %s", c.what, p.exitCode(), c.value, p.tail())
			}
		}
		l.quietStop(p)
	}
}

// testLaunchLongPath starts the driver on a socket path of more than 107
// bytes, which no driver can bind: it reports it with a message naming the
// path (§2.2, a SHOULD).
func testLaunchLongPath(s *suite, t T) {
	l := needLaunch(s, t)
	dir := l.newDir(t)
	const want = 120
	path := filepath.Join(dir, strings.Repeat("x", max(want-len(dir)-len("//driver.sock"), 1)), "driver.sock")
	p := l.start(t, []string{"--endpoint", unixEndpoint(path)}, "")
	// Nothing can answer on that path; the driver is judged by its exit.
	switch l.waitAnswerOrExit(p, unixEndpoint(path)) {
	case answered:
		ruleLaunchLongPath.errorf(t, "a driver answered on the %d-byte path %s", len(path), path)
	case silent:
		ruleLaunchLongPath.errorf(t, "started on the %d-byte socket path %s, the driver neither exited nor could be reached within %v; %s", len(path), path, l.ready, p.tail())
	case exited:
		switch {
		case p.exitCode() == 0:
			ruleLaunchLongPath.errorf(t, "started on the %d-byte socket path %s, the driver exited with status 0", len(path), path)
		case !strings.Contains(p.out.String(), path):
			ruleLaunchLongPath.errorf(t, "started on the %d-byte socket path %s, the driver exited with status %d without naming the path; %s", len(path), path, p.exitCode(), p.tail())
		}
	}
	l.quietStop(p)
}

// testLaunchNoOtherFiles starts the driver in an empty directory, makes a
// call, stops it, and checks that nothing but the socket was ever created
// next to it (§2.2: the directory may be shared).
func testLaunchNoOtherFiles(s *suite, t T) {
	l := needLaunch(s, t)
	dir := l.newDir(t)
	ep := unixEndpoint(filepath.Join(dir, "driver.sock"))
	p := l.start(t, []string{"--endpoint", ep}, "")
	if err := l.waitAnswer(p, ep); err != nil {
		ruleLaunchOtherFiles.errorf(t, "%v", err)
		l.quietStop(p)
		return
	}
	others := func(when string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			ruleIdentityOK.fatalf(t, "cannot read %s: %v", dir, err)
		}
		var names []string
		for _, e := range entries {
			if e.Name() != "driver.sock" {
				names = append(names, e.Name())
			}
		}
		if len(names) > 0 {
			ruleLaunchOtherFiles.errorf(t, "%s, the socket's directory %s holds %s besides the socket", when, dir, strings.Join(names, ", "))
		}
	}
	others("while the driver serves")
	l.quietStop(p)
	others("after the driver stopped")
}

// testLaunchNoTCP checks that a driver given a unix:// endpoint serves the
// Driver API on no TCP port: neither beside the socket while it serves, nor
// instead of it when the socket cannot be made (a regular file at the
// path) (§2.3: TCP only when the operator asked for it, no fallback).
func testLaunchNoTCP(s *suite, t T) {
	l := needLaunch(s, t)
	if _, err := tcpListeners(os.Getpid()); err != nil {
		t.Skipf("%v", err)
	}
	ep := unixEndpoint(filepath.Join(l.newDir(t), "driver.sock"))
	p := l.start(t, []string{"--endpoint", ep}, "")
	if err := l.waitAnswer(p, ep); err != nil {
		ruleLaunchNoTCP.errorf(t, "%v", err)
	} else {
		l.noDriverOnTCP(t, p, "serving on "+ep)
	}
	l.quietStop(p)

	path := filepath.Join(l.newDir(t), "driver.sock")
	if err := os.WriteFile(path, []byte("not a socket\n"), 0o600); err != nil {
		ruleIdentityOK.fatalf(t, "cannot create %s: %v", path, err)
	}
	p = l.start(t, []string{"--endpoint", unixEndpoint(path)}, "")
	if l.waitAnswerOrExit(p, unixEndpoint(path)) != exited {
		l.noDriverOnTCP(t, p, "with a regular file at its socket path "+path)
	}
	l.quietStop(p)
}

// noDriverOnTCP asks every TCP port the driver's processes listen on for
// GetPluginInfo; an answer is the Driver API served on TCP. Other
// listeners (a metrics port) do not answer it.
func (l *launcher) noDriverOnTCP(t T, p *process, when string) {
	addrs, err := tcpListeners(p.cmd.Process.Pid)
	if err != nil {
		t.Logf("cannot list the driver's TCP listeners: %v", err)
		return
	}
	for _, addr := range addrs {
		conn, err := fastConn("tcp://" + addr)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = driverv1alpha1.NewIdentityServiceClient(conn).GetPluginInfo(ctx, &driverv1alpha1.GetPluginInfoRequest{})
		cancel()
		_ = conn.Close()
		if err == nil {
			ruleLaunchNoTCP.errorf(t, "%s, the driver also serves the Driver API on TCP %s", when, addr)
		}
	}
}

package conformance

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/stats"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// The Launcher checks start the driver themselves (launcher mode,
// Config.Launch): each starts its own driver processes on sockets of its
// own, and stops them before it ends. They run last, once the run's other
// VMs are gone, because the processes share the driver's provider (a state
// file, an API server) with the driver the other checks use.

// needLaunch skips a Launcher check outside launcher mode.
func needLaunch(s *suite, t T) *launcher {
	if s.launch == nil {
		t.Skipf("the suite did not start the driver (launcher mode: --driver-command)")
	}
	return s.launch
}

func unixEndpoint(path string) string { return "unix://" + path }

// quietStop stops a driver that is not the subject of the check.
func (l *launcher) quietStop(p *process) {
	if l.sigtermIgnored.Load() {
		p.kill()
		return
	}
	if !p.stop(l.StopTimeout) {
		l.sigtermIgnored.Store(true)
	}
}

// testLaunchEndpointPrecedence starts the driver with the endpoint as a
// flag, as the environment variable, as both, and (Launch.DefaultEndpoint)
// as neither, and checks where it listens (§2.1).
func testLaunchEndpointPrecedence(s *suite, t T) {
	l := needLaunch(s, t)
	dir := l.newDir(t)
	flagEP := unixEndpoint(filepath.Join(dir, "flag.sock"))
	p := l.start(t, []string{"--endpoint", flagEP}, "")
	if err := l.waitAnswer(p, flagEP); err != nil {
		ruleLaunchPrecedence.errorf(t, "started with --endpoint %s and no %s: %v", flagEP, endpointEnv, err)
	}
	l.quietStop(p)

	envEP := unixEndpoint(filepath.Join(dir, "env.sock"))
	p = l.start(t, nil, envEP)
	if err := l.waitAnswer(p, envEP); err != nil {
		ruleLaunchPrecedence.errorf(t, "started with %s=%s and no --endpoint: %v", endpointEnv, envEP, err)
	}
	l.quietStop(p)

	bothFlag := filepath.Join(dir, "both-flag.sock")
	bothEnv := filepath.Join(dir, "both-env.sock")
	p = l.start(t, []string{"--endpoint", unixEndpoint(bothFlag)}, unixEndpoint(bothEnv))
	if err := l.waitAnswer(p, unixEndpoint(bothFlag)); err != nil {
		ruleLaunchPrecedence.errorf(t, "started with --endpoint %s and %s=%s, the flag wins: %v", unixEndpoint(bothFlag), endpointEnv, unixEndpoint(bothEnv), err)
	}
	if _, err := os.Lstat(bothEnv); err == nil {
		ruleLaunchPrecedence.errorf(t, "started with --endpoint %s and %s=%s, the driver created %s: the flag wins over the variable", unixEndpoint(bothFlag), endpointEnv, unixEndpoint(bothEnv), bothEnv)
	}
	l.quietStop(p)

	if !l.DefaultEndpoint {
		t.Logf("the default endpoint %s was not tried (Launch.DefaultEndpoint, --driver-default-endpoint)", defaultDriverEndpoint)
		return
	}
	_, path, _ := parseEndpoint(defaultDriverEndpoint)
	if _, err := os.Lstat(path); err == nil {
		t.Logf("the default endpoint %s was not tried: %s exists (another driver?)", defaultDriverEndpoint, path)
		return
	}
	// Remove what the driver creates for the default, unless it was there.
	for d := filepath.Dir(path); d != "/"; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); errors.Is(err, fs.ErrNotExist) {
			t.Cleanup(func() { _ = os.Remove(d) })
		}
	}
	p = l.start(t, nil, "")
	if err := l.waitAnswer(p, defaultDriverEndpoint); err != nil {
		ruleLaunchPrecedence.errorf(t, "started with neither --endpoint nor %s, the driver listens on %s: %v", endpointEnv, defaultDriverEndpoint, err)
	}
	l.quietStop(p)
}

// staleSocket leaves a socket file at path that nobody accepts on, as a
// killed driver does.
func staleSocket(path string) error {
	lis, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	return lis.Close()
}

// testLaunchStaleSocket starts the driver where a socket nobody serves is
// left over: it must remove it and serve (§2.2).
func testLaunchStaleSocket(s *suite, t T) {
	l := needLaunch(s, t)
	path := filepath.Join(l.newDir(t), "driver.sock")
	if err := staleSocket(path); err != nil {
		ruleIdentityOK.fatalf(t, "cannot leave a stale socket at %s: %v", path, err)
	}
	p := l.start(t, []string{"--endpoint", unixEndpoint(path)}, "")
	if err := l.waitAnswer(p, unixEndpoint(path)); err != nil {
		ruleLaunchStale.errorf(t, "with a stale socket at %s: %v", path, err)
	}
	l.quietStop(p)
}

// testLaunchLiveSocket starts the driver where another process serves the
// socket: the driver should refuse to start and leave that socket (§2.2).
func testLaunchLiveSocket(s *suite, t T) {
	l := needLaunch(s, t)
	path := filepath.Join(l.newDir(t), "driver.sock")
	lis, err := net.Listen("unix", path)
	if err != nil {
		ruleIdentityOK.fatalf(t, "cannot listen on %s: %v", path, err)
	}
	defer func() { _ = lis.Close() }()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	ours, err := os.Lstat(path)
	if err != nil {
		ruleIdentityOK.fatalf(t, "cannot stat %s: %v", path, err)
	}
	p := l.start(t, []string{"--endpoint", unixEndpoint(path)}, "")
	replaced := func() bool {
		now, err := os.Lstat(path)
		return err != nil || !os.SameFile(ours, now)
	}
	deadline := time.Now().Add(l.ready)
	for !p.exited() && !replaced() && time.Now().Before(deadline) {
		p.waitExit(50 * time.Millisecond)
	}
	switch {
	case replaced():
		ruleLaunchLive.errorf(t, "the driver removed or replaced the socket %s that another process serves", path)
	case !p.exited():
		ruleLaunchLive.errorf(t, "the driver started where another process serves %s, and did not exit within %v", path, l.ready)
	case p.exitCode() == 0:
		ruleLaunchLive.errorf(t, "the driver exited with status 0 where another process serves %s: refusing to start is a non-zero status", path)
	default:
		t.Logf("refused with status %d; %s", p.exitCode(), p.tail())
	}
	l.quietStop(p)
}

// testLaunchNonSocket starts the driver where a regular file, a directory
// or a symbolic link is at the path: it must refuse to start and keep it
// (§2.2).
func testLaunchNonSocket(s *suite, t T) {
	l := needLaunch(s, t)
	content := []byte("not a socket; the driver must keep this file\n")
	for _, kind := range []string{"regular file", "directory", "symbolic link"} {
		dir := l.newDir(t)
		path := filepath.Join(dir, "driver.sock")
		var err error
		switch kind {
		case "regular file":
			err = os.WriteFile(path, content, 0o600)
		case "directory":
			if err = os.Mkdir(path, 0o700); err == nil {
				err = os.WriteFile(filepath.Join(path, "keep"), content, 0o600)
			}
		case "symbolic link":
			target := filepath.Join(dir, "target")
			if err = os.WriteFile(target, content, 0o600); err == nil {
				err = os.Symlink(target, path)
			}
		}
		if err != nil {
			ruleIdentityOK.fatalf(t, "cannot create a %s at %s: %v", kind, path, err)
		}
		before, _ := os.Lstat(path)
		p := l.start(t, []string{"--endpoint", unixEndpoint(path)}, "")
		switch l.waitAnswerOrExit(p, unixEndpoint(path)) {
		case answered:
			ruleLaunchNonSocket.errorf(t, "with a %s at %s the driver started and answered", kind, path)
		case silent:
			ruleLaunchNonSocket.errorf(t, "with a %s at %s the driver neither exited nor answered within %v", kind, path, l.ready)
		case exited:
			if p.exitCode() == 0 {
				ruleLaunchNonSocket.errorf(t, "with a %s at %s the driver exited with status 0: refusing to start is a non-zero status", kind, path)
			}
		}
		l.quietStop(p)
		after, err := os.Lstat(path)
		if err != nil || !os.SameFile(before, after) {
			ruleLaunchNonSocket.errorf(t, "the %s at %s is gone or replaced after the driver ran", kind, path)
		}
	}
}

// testLaunchDirectories starts the driver on a socket whose directory does
// not exist, and on one whose directory has mode 0755, which must keep its
// mode and owner (§2.2).
func testLaunchDirectories(s *suite, t T) {
	l := needLaunch(s, t)
	base := l.newDir(t)
	missing := filepath.Join(base, "new", "sub")
	ep := unixEndpoint(filepath.Join(missing, "driver.sock"))
	p := l.start(t, []string{"--endpoint", ep}, "")
	if err := l.waitAnswer(p, ep); err != nil {
		ruleLaunchNewDir.errorf(t, "with the socket's directory %s missing: %v", missing, err)
	} else {
		for _, d := range []string{filepath.Join(base, "new"), missing} {
			fi, err := os.Stat(d)
			switch {
			case err != nil:
				ruleLaunchNewDir.errorf(t, "the driver serves, but %s: %v", d, err)
			case fi.Mode().Perm()&0o007 != 0:
				ruleLaunchNewDir.errorf(t, "the driver created %s with mode %04o, with permissions for others", d, fi.Mode().Perm())
			}
		}
	}
	l.quietStop(p)

	existing := l.newDir(t)
	if err := os.Chmod(existing, 0o755); err != nil {
		ruleIdentityOK.fatalf(t, "chmod %s: %v", existing, err)
	}
	before, err := os.Stat(existing)
	if err != nil {
		ruleIdentityOK.fatalf(t, "stat %s: %v", existing, err)
	}
	ep = unixEndpoint(filepath.Join(existing, "driver.sock"))
	p = l.start(t, []string{"--endpoint", ep}, "")
	if err := l.waitAnswer(p, ep); err != nil {
		ruleLaunchExistingDir.errorf(t, "in the existing directory %s: %v", existing, err)
	} else if fi, err := os.Stat(existing); err == nil {
		if fi.Mode().Perm() != 0o755 {
			ruleLaunchExistingDir.errorf(t, "the driver changed the mode of the existing directory %s from 0755 to %04o", existing, fi.Mode().Perm())
		}
		uid, gid, ok := fileOwner(before)
		nowUID, nowGID, nowOK := fileOwner(fi)
		if ok && nowOK && (uid != nowUID || gid != nowGID) {
			ruleLaunchExistingDir.errorf(t, "the driver changed the owner of the existing directory %s from %d:%d to %d:%d", existing, uid, gid, nowUID, nowGID)
		}
	}
	l.quietStop(p)
}

// testLaunchSocketMode starts the driver (with umask 022) and checks the
// socket's mode as soon as it answered its first call (§2.2).
func testLaunchSocketMode(s *suite, t T) {
	l := needLaunch(s, t)
	path := filepath.Join(l.newDir(t), "driver.sock")
	p := l.start(t, []string{"--endpoint", unixEndpoint(path)}, "")
	if err := l.waitAnswer(p, unixEndpoint(path)); err != nil {
		ruleLaunchSocketMode.errorf(t, "%v", err)
		return
	}
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		ruleLaunchSocketMode.errorf(t, "the driver answered, but %s: %v", path, err)
	case fi.Mode().Type() != os.ModeSocket:
		ruleLaunchSocketMode.errorf(t, "%s is not a socket (%v)", path, fi.Mode())
	case fi.Mode().Perm()&0o077 != 0:
		ruleLaunchSocketMode.errorf(t, "when the driver answered its first call its socket %s had mode %04o", path, fi.Mode().Perm())
	}
	l.quietStop(p)
}

// headerWatch closes sent when the client has sent the headers of a call of
// method: from then on the call is on the wire, ahead of every later call
// of the connection.
type headerWatch struct {
	method string
	once   sync.Once
	sent   chan struct{}
}

type methodKey struct{}

func (h *headerWatch) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, methodKey{}, info.FullMethodName)
}

func (h *headerWatch) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.OutHeader); ok && ctx.Value(methodKey{}) == h.method {
		h.once.Do(func() { close(h.sent) })
	}
}

func (h *headerWatch) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (h *headerWatch) HandleConn(context.Context, stats.ConnStats)                       {}

// on returns a suite that talks to the driver at endpoint over conn, with
// the run's names, canary and capabilities.
func (s *suite) on(endpoint string, conn *grpc.ClientConn) *suite {
	cfg := s.cfg
	cfg.Endpoint = endpoint
	return &suite{
		cfg: cfg, conn: conn, launch: s.launch,
		identity: driverv1alpha1.NewIdentityServiceClient(conn),
		machines: driverv1alpha1.NewMachineServiceClient(conn),
		runID:    s.runID, prefix: s.prefix, canary: s.canary,
		info: s.info, caps: s.caps,
		vms: map[string]*vm{}, echoReported: map[string]bool{},
	}
}

// dial connects to endpoint with extra options.
func dial(t T, endpoint string, opts ...grpc.DialOption) *grpc.ClientConn {
	conn, err := fastConn(endpoint, opts...)
	if err != nil {
		ruleIdentityOK.fatalf(t, "%v", err)
	}
	return conn
}

// fastConn is a client connection that dials again soon after a failed
// attempt (gRPC's default waits a second and more), for a driver that is
// just starting.
func fastConn(endpoint string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	d, err := dialer(endpoint)
	if err != nil {
		return nil, err
	}
	return grpc.NewClient("passthrough:///driver", append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(d), grpc.WithAuthority("localhost"),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.5, MaxDelay: 200 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}),
	}, opts...)...)
}

// withDriver starts a driver on a new socket, runs f against it and stops
// it; it is how the Launcher checks clean up the VMs of drivers they
// stopped.
func (l *launcher) withDriver(s *suite, t T, f func(s *suite)) {
	ep := unixEndpoint(filepath.Join(l.newDir(t), "driver.sock"))
	p := l.start(t, []string{"--endpoint", ep}, "")
	defer l.quietStop(p)
	if err := l.waitAnswer(p, ep); err != nil {
		ruleCleanup.errorf(t, "a driver started to clean up: %v", err)
		return
	}
	conn := dial(t, ep)
	defer func() { _ = conn.Close() }()
	f(s.on(ep, conn))
}

// deleteVM deletes name through a driver of its own, at the end of a check.
func (l *launcher) deleteVM(s *suite, t T, name string) {
	t.Cleanup(func() {
		l.withDriver(s, t, func(s2 *suite) {
			v := &vm{name: name}
			if err := s2.deleteWithRetry(t, v); err != nil {
				ruleCleanup.errorf(t, "cleanup: DeleteMachine of %s answered %s; the VM may be left behind", name, describe(err))
			}
		})
	})
}

// testLaunchSIGTERM sends SIGTERM while a CreateMachine is in flight: the
// call must finish, the driver exit with status 0 within the grace period,
// and the socket be gone (§2.7, §2.2).
func testLaunchSIGTERM(s *suite, t T) {
	l := needLaunch(s, t)
	path := filepath.Join(l.newDir(t), "driver.sock")
	ep := unixEndpoint(path)
	p := l.start(t, []string{"--endpoint", ep}, "")
	if err := l.waitAnswer(p, ep); err != nil {
		ruleLaunchGraceful.errorf(t, "%v", err)
		return
	}
	name := s.name("launch-sigterm")
	l.deleteVM(s, t, name)
	watch := &headerWatch{method: "/machina.driver.v1alpha1.MachineService/CreateMachine", sent: make(chan struct{})}
	conn := dial(t, ep, grpc.WithStatsHandler(watch))
	defer func() { _ = conn.Close() }()
	s2 := s.on(ep, conn)
	created := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeouts.Create)
		defer cancel()
		_, err := s2.machines.CreateMachine(ctx, s2.createRequest(name))
		created <- err
	}()
	select {
	case <-watch.sent:
	case err := <-created:
		ruleLaunchGraceful.errorf(t, "CreateMachine of %s, before any SIGTERM, answered %s", name, describe(err))
		l.quietStop(p)
		return
	}
	// A Probe sent after the create on the same connection, once answered,
	// shows that the driver has received the create.
	if _, err := s2.probe(t); err != nil {
		ruleLaunchGraceful.errorf(t, "Probe answered %s", describe(err))
	}
	inFlight := true
	select {
	case err := <-created:
		inFlight = false
		created <- err
	default:
	}
	start := time.Now()
	p.signal(syscall.SIGTERM)
	exitedByItself := true
	if inFlight {
		err := <-created
		if err != nil {
			ruleLaunchGraceful.errorf(t, "CreateMachine of %s, in flight when the driver got SIGTERM, answered %s: calls in flight finish", name, describe(err))
		}
	} else {
		t.Logf("CreateMachine of %s was answered before SIGTERM: the driver creates too fast for a call to be in flight; only the exit is checked", name)
	}
	switch {
	case !p.waitExit(l.StopTimeout):
		ruleLaunchGraceful.errorf(t, "the driver still runs %v after SIGTERM (killed now)", l.StopTimeout)
		l.sigtermIgnored.Store(true)
		exitedByItself = false
		p.kill()
	case p.exitCode() != 0:
		ruleLaunchGraceful.errorf(t, "after SIGTERM the driver exited with status %d, want 0; %s", p.exitCode(), p.tail())
	default:
		t.Logf("exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	}
	if fi, err := os.Lstat(path); err == nil && exitedByItself {
		ruleLaunchSocketGone.errorf(t, "after the driver exited, %s is still there (%v)", path, fi.Mode().Type())
	}
}

// testLaunchRestart creates a VM, stops the driver, starts it again on the
// same socket and checks that the new process keeps the contract for the
// VM: found with its provider ID, or gone with the old process (a provider
// in the driver's memory); never a second VM (§2.7).
func testLaunchRestart(s *suite, t T) {
	l := needLaunch(s, t)
	path := filepath.Join(l.newDir(t), "driver.sock")
	ep := unixEndpoint(path)
	name := s.name("launch-restart")
	l.deleteVM(s, t, name)

	p := l.start(t, []string{"--endpoint", ep}, "")
	if err := l.waitAnswer(p, ep); err != nil {
		ruleLaunchRestart.errorf(t, "%v", err)
		return
	}
	conn := dial(t, ep)
	first, err := s.on(ep, conn).createMachine(t, s.createRequest(name))
	_ = conn.Close()
	if err != nil {
		ruleLaunchRestart.errorf(t, "CreateMachine of %s answered %s", name, describe(err))
		l.quietStop(p)
		return
	}
	l.quietStop(p)

	p = l.start(t, []string{"--endpoint", ep}, "")
	defer l.quietStop(p)
	if err := l.waitAnswer(p, ep); err != nil {
		ruleLaunchRestart.errorf(t, "started again on the socket of the stopped driver: %v", err)
		return
	}
	conn = dial(t, ep)
	defer func() { _ = conn.Close() }()
	s2 := s.on(ep, conn)
	st, err := s2.getMachineStatus(t, s2.statusRequest(name, ""))
	survived := err == nil
	switch {
	case codeOf(err) == codes.NotFound:
		t.Logf("%s did not survive the restart (the driver's provider lives in its memory): nothing to keep", name)
	case err != nil:
		ruleLaunchRestart.errorf(t, "after the restart GetMachineStatus of %s answered %s, want OK or NOT_FOUND", name, describe(err))
		return
	case st.GetProviderId() != first.GetProviderId():
		ruleLaunchRestart.errorf(t, "after the restart GetMachineStatus of %s returned provider ID %q, before it %q", name, st.GetProviderId(), first.GetProviderId())
	}
	again, err := s2.createMachine(t, s.createRequest(name))
	switch {
	case err != nil:
		ruleLaunchRestart.errorf(t, "after the restart CreateMachine of %s answered %s, want OK", name, describe(err))
	case survived && again.GetProviderId() != first.GetProviderId():
		ruleLaunchRestart.errorf(t, "after the restart CreateMachine of %s returned provider ID %q although its VM %q survived: a second VM", name, again.GetProviderId(), first.GetProviderId())
	}
	if _, err := s2.deleteMachine(t, s2.deleteRequest(&vm{name: name, providerID: again.GetProviderId()})); err != nil {
		ruleLaunchRestart.errorf(t, "after the restart DeleteMachine of %s answered %s, want OK", name, describe(err))
	}
	if _, err := s2.getMachineStatus(t, s2.statusRequest(name, "")); codeOf(err) != codes.NotFound {
		ruleLaunchRestart.errorf(t, "after the restart and DeleteMachine, GetMachineStatus of %s answered %s, want NOT_FOUND", name, describe(err))
	}
}

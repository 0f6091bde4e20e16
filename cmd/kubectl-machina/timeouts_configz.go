package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// configzTimeout bounds the read of the manager's /configz: "why" must not
// hang on a manager that does not answer.
const configzTimeout = 2 * time.Second

// defaultManagerService is the manager's metrics Service of deploy/base
// (metrics-service.yaml): NAMESPACE/NAME:PORT.
const defaultManagerService = "machina-system/machina-manager-metrics:metrics"

// timeoutFlagNames are the flags of timeoutFlags, which are also the
// manager's flag names and so the keys of its /configz.
var timeoutFlagNames = []string{"machine-creation-timeout", "machine-health-timeout", "machine-drain-timeout", "node-conditions"}

// managerFlags say where the manager's /configz is.
type managerFlags struct {
	service string
}

func (mf *managerFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&mf.service, "manager-metrics-service", defaultManagerService,
		`the manager's metrics Service as NAMESPACE/NAME:PORT, whose /configz (read through the API server's service proxy) gives the manager's timeouts; "" uses the defaults`)
}

// resolveTimeouts fills the timeouts the user did not pass from the
// manager's /configz, and returns the line that says where they come from.
// When /configz cannot be read, the defaults stay and the line says why.
func resolveTimeouts(ctx context.Context, fs *pflag.FlagSet, t *timeoutFlags, mf *managerFlags, cfg *rest.Config) string {
	var explicit []string
	for _, n := range timeoutFlagNames {
		if fs.Changed(n) {
			explicit = append(explicit, "--"+n)
		}
	}
	if len(explicit) == len(timeoutFlagNames) {
		return "Timeouts: from the command line"
	}
	fromFlags := ""
	if len(explicit) > 0 {
		fromFlags = "; " + strings.Join(explicit, ", ") + " from the command line"
	}
	if mf.service == "" {
		return "Timeouts: the manager's defaults (--manager-metrics-service is empty)" + fromFlags
	}
	values, err := readConfigz(ctx, cfg, mf.service)
	if err == nil {
		err = t.applyConfigz(values, fs)
	}
	if err != nil {
		return fmt.Sprintf("Timeouts: the manager's defaults, as its /configz could not be read (%v); pass the manager's --machine-*-timeout flags if it runs with others%s", err, fromFlags)
	}
	return fmt.Sprintf("Timeouts: the manager's, from /configz of Service %s%s", mf.service, fromFlags)
}

// readConfigz reads /configz through the API server's service proxy, with
// the credentials of the user's kubeconfig.
func readConfigz(ctx context.Context, cfg *rest.Config, service string) (map[string]string, error) {
	ns, namePort, ok := strings.Cut(service, "/")
	name, port, ok2 := strings.Cut(namePort, ":")
	if !ok || !ok2 || ns == "" || name == "" || port == "" {
		return nil, fmt.Errorf("--manager-metrics-service %q is not NAMESPACE/NAME:PORT", service)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, configzTimeout)
	defer cancel()
	get := func(scheme string) ([]byte, error) {
		return cs.CoreV1().Services(ns).ProxyGet(scheme, name, port, "configz", nil).DoRaw(ctx)
	}
	body, err := get("https")
	if err != nil && ctx.Err() == nil && retryPlain(err, body) {
		// A manager with --metrics-secure=false serves plain HTTP, which
		// the proxy's TLS handshake fails on.
		if plain, perr := get("http"); perr == nil {
			body, err = plain, nil
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no answer from Service %s within %s", service, configzTimeout)
		}
		return nil, configzError(err, service, body)
	}
	return parseConfigz(body)
}

// retryPlain reports whether an HTTPS attempt failed in a way plain HTTP
// could fix: not refused by authentication or authorization, and not for
// want of endpoints.
func retryPlain(err error, body []byte) bool {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return false
	}
	var st metav1.Status
	return json.Unmarshal(body, &st) != nil || !strings.Contains(st.Message, "no endpoints available")
}

// configzError says in a few words why the proxy gave no /configz.
func configzError(err error, service string, body []byte) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("forbidden: you may not get services/proxy of Service %s", service)
	case apierrors.IsUnauthorized(err):
		// The API server does not pass the caller's token on to the
		// Service; a manager serving /configz with --metrics-secure (the
		// default) authenticates callers by bearer token, so it refuses the
		// proxied request.
		return fmt.Errorf("the manager refused the proxied request: 401 Unauthorized; it serves /configz through the proxy only with --metrics-secure=false")
	}
	// The answer's body says more than client-go's generic message for its
	// status code: the API server's Status (e.g. "no endpoints available
	// for service", also for a Service that does not exist) or what the
	// manager said.
	msg := strings.TrimSpace(string(body))
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		msg = st.Message
	}
	if msg == "" {
		msg = err.Error()
	}
	return fmt.Errorf("service %s: %s", service, truncate(oneLine(msg), 120))
}

// parseConfigz reads the manager's /configz document (core/manager
// configz.go): {"machina-manager": {"flag-name": "value as the flag
// prints it", ...}}.
func parseConfigz(body []byte) (map[string]string, error) {
	var doc map[string]map[string]string
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("/configz is not the manager's JSON: %v", err)
	}
	values, ok := doc["machina-manager"]
	if !ok {
		return nil, errors.New(`/configz has no "machina-manager" section`)
	}
	return values, nil
}

// applyConfigz sets the timeouts not given on the command line from the
// manager's flag values. Nothing is set unless every value present parses,
// so a bad document leaves the defaults whole.
func (t *timeoutFlags) applyConfigz(values map[string]string, fs *pflag.FlagSet) error {
	next := *t
	durations := map[string]*time.Duration{
		"machine-creation-timeout": &next.creation,
		"machine-health-timeout":   &next.health,
		"machine-drain-timeout":    &next.drain,
	}
	for name, d := range durations {
		v, ok := values[name]
		if !ok || fs.Changed(name) {
			continue
		}
		parsed, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("/configz: %s=%q is not a duration", name, v)
		}
		*d = parsed
	}
	if v, ok := values["node-conditions"]; ok && !fs.Changed("node-conditions") {
		next.nodeConditions = nil
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				next.nodeConditions = append(next.nodeConditions, s)
			}
		}
	}
	*t = next
	return nil
}

package manager

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// namespaceCheckTimeout bounds the check that the manager's namespaces
// exist: an API server that does not answer in this time is waited for
// later, as always.
const namespaceCheckTimeout = 10 * time.Second

// checkNamespaces fails when the namespace of the machine objects (or of
// the Lease) definitely does not exist. Without it the manager starts and
// only logs, forever, that it cannot create its Lease or events there. Any
// other answer (unreachable, Forbidden: the ServiceAccount of deploy/ may
// read its own namespace, other identities may not) lets it go on as
// before: the manager waits for what it cannot reach.
func (m *Manager) checkNamespaces(ctx context.Context) error {
	flags := map[string]string{m.opts.Namespace: "--namespace"}
	if m.lock != nil {
		if ns := m.opts.leaderElectionNamespace(); ns != m.opts.Namespace {
			flags[ns] = "--leader-elect-resource-namespace"
		}
	}
	return checkNamespaces(ctx, m.base.GetAPIReader(), m.log, flags)
}

// checkNamespaces checks each namespace of flags (namespace -> the flag
// that named it) with reader.
func checkNamespaces(ctx context.Context, reader client.Reader, log logr.Logger, flags map[string]string) error {
	for name, flag := range flags {
		ctx, cancel := context.WithTimeout(ctx, namespaceCheckTimeout)
		err := reader.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
		cancel()
		switch {
		case err == nil:
		case namespaceNotFound(err, name):
			return fmt.Errorf("namespace %q (%s) does not exist in the control cluster: create it (kubectl create namespace %s) or name another with %s",
				name, flag, name, flag)
		default:
			log.Info("Could not check that the namespace exists; going on", "namespace", name, "flag", flag, "error", err.Error())
		}
	}
	return nil
}

// namespaceNotFound tells whether err is the API server's NotFound for the
// namespace name itself (not, say, a proxy's 404).
func namespaceNotFound(err error, name string) bool {
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsNotFound(err) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces" && d.Name == name
}

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/manifests"
)

// The demo runs the manager and the driver as the ServiceAccount of
// deploy/, with the RBAC of deploy/: what works in the demo works with the
// manifests' rights, and a missing right shows up here first.
const (
	serviceAccount = "machina-manager"
	namespace      = "machina-system"
	fieldOwner     = "machina-demo"
	tokenLifetime  = 24 * time.Hour
)

// rbacKinds are the objects of the overlay the demo applies: the identity
// and its rights. The Deployment and Service are left out: the demo runs
// the manager and driver as local processes, and envtest has no controllers
// to run a Deployment anyway.
var rbacKinds = []string{"Namespace", "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}

// identity is a ServiceAccount of deploy/ the demo runs a process as.
type identity struct{ namespace, name string }

// managerIdentity is the manager's and the driver's; agentIdentity that of
// deploy/node-agent, which the pool step's node agents run as.
var (
	managerIdentity = identity{namespace, serviceAccount}
	agentIdentity   = identity{"machina-node-agent", "machina-node-agent"}
)

// installIdentity applies the ServiceAccount and RBAC of the overlay dir and
// writes a kubeconfig file into dir that authenticates as the ServiceAccount
// id with a token from the TokenRequest API.
func installIdentity(ctx context.Context, admin *rest.Config, c client.Client, overlay, dir string, id identity) (string, error) {
	if err := installKinds(ctx, c, overlay, rbacKinds...); err != nil {
		return "", err
	}
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return "", err
	}
	seconds := int64(tokenLifetime / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(id.namespace).CreateToken(ctx, id.name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", id.namespace, id.name, err)
	}
	return writeKubeconfig(admin, filepath.Join(dir, id.name+".kubeconfig"), id, tr.Status.Token)
}

// installKinds applies the objects of the overlay dir of the given kinds.
func installKinds(ctx context.Context, c client.Client, overlay string, kinds ...string) error {
	objs, err := manifests.Render(overlay)
	if err != nil {
		return err
	}
	objs = manifests.OfKinds(objs, kinds...)
	// kube-node-lease, which holds a Role of the virtualnode driver, is
	// created by the API server shortly after it starts: retry until it is.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := manifests.Apply(ctx, c, objs, fieldOwner); err != nil {
			if ctx.Err() != nil {
				return false, err
			}
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		// Apply once more for a message that says what failed.
		if applyErr := manifests.Apply(ctx, c, objs, fieldOwner); applyErr != nil {
			err = applyErr
		}
		return fmt.Errorf("installing the %s of %s: %w", strings.Join(kinds, ", "), overlay, err)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig file at path that authenticates as
// the ServiceAccount id with token.
func writeKubeconfig(admin *rest.Config, path string, id identity, token string) (string, error) {
	user := "system:serviceaccount:" + id.namespace + ":" + id.name
	kc := clientcmdapi.NewConfig()
	kc.Clusters["demo"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["demo"] = &clientcmdapi.Context{Cluster: "demo", AuthInfo: user, Namespace: id.namespace}
	kc.CurrentContext = "demo"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", err
	}
	return path, os.Chmod(path, 0o600)
}

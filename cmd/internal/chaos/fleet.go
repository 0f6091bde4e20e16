package chaos

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// deploymentName is the one MachineDeployment of each fleet.
const deploymentName = "chaos"

// fleet is one MachineDeployment in a namespace of its own, with its own
// driver and manager: the virtualnode fleet (every VM is a Node of the same
// API server) or the inmemory fleet with injected faults and no target
// cluster.
type fleet struct {
	name      string
	namespace string
	provider  string
	// classes are the two MachineClasses a rollout switches between, with
	// their provider specs.
	classes [2]string
	specs   map[string]string
	// hasNodes: the driver registers a Node per VM in the target cluster.
	hasNodes bool
	// healthy is the phase of a machine that is done: Running with a Node,
	// Available without a target cluster.
	healthy v1alpha1.MachinePhase

	driver, manager *component
	socket          string
	vms             driverv1alpha1.MachineServiceClient
	conn            *grpc.ClientConn
	// healthAddr is the manager's health probe address.
	healthAddr string

	// replicas and class are what the deployment asks for now.
	replicas int32
	class    string
}

// socketPath returns a driver socket path short enough for a Unix socket
// (108 bytes), in a directory of its own under os.TempDir.
func socketPath(name string) (string, error) {
	dir, err := os.MkdirTemp("", "chaos")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name+".sock"), nil
}

// freeAddress returns a loopback address whose port was free a moment ago.
func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// connect opens the suite's own connection to the driver's socket, beside
// the manager's, to list VMs as the provider sees them.
func (f *fleet) connect() error {
	conn, err := grpc.NewClient("unix://"+f.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	f.conn, f.vms = conn, driverv1alpha1.NewMachineServiceClient(conn)
	return nil
}

// driverClass is the Driver API view of one of the fleet's classes.
func (f *fleet) driverClass(name string) *driverv1alpha1.MachineClass {
	return &driverv1alpha1.MachineClass{
		Name:         name,
		Namespace:    f.namespace,
		Provider:     f.provider,
		ProviderSpec: []byte(f.specs[name]),
	}
}

// secretName is the Secret of the fleet's classes; it holds the canary.
const secretName = "chaos-secret"

// createObjects creates, in the fleet's namespace, the Secret with the
// canary in its user data and in a credential key, the two classes and the
// deployment with no replicas.
func (f *fleet) createObjects(ctx context.Context, c client.Client, canary string) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: secretName},
		Data: map[string][]byte{
			"userData": []byte("#cloud-config\nhostname: <<MACHINE_NAME>>\nwrite_files:\n- path: /etc/token\n  content: " + canary + "\n"),
			"apiToken": []byte(canary),
		},
	}
	if err := c.Create(ctx, secret); err != nil {
		return err
	}
	for _, name := range f.classes {
		class := &v1alpha1.MachineClass{
			ObjectMeta:   metav1.ObjectMeta{Namespace: f.namespace, Name: name},
			Provider:     f.provider,
			ProviderSpec: runtime.RawExtension{Raw: []byte(f.specs[name])},
			SecretRef:    &corev1.SecretReference{Namespace: f.namespace, Name: secretName},
		}
		if err := c.Create(ctx, class); err != nil {
			return err
		}
	}
	labels := map[string]string{"fleet": f.name}
	maxSurge, maxUnavailable := intstr.FromString("50%"), intstr.FromInt32(0)
	f.class = f.classes[0]
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: deploymentName},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: 0,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: v1alpha1.MachineDeploymentStrategy{
				Type: v1alpha1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: &v1alpha1.RollingUpdateMachineDeployment{
					UpdateConfiguration: v1alpha1.UpdateConfiguration{MaxSurge: &maxSurge, MaxUnavailable: &maxUnavailable},
				},
			},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: f.class}},
			},
		},
	}
	return c.Create(ctx, md)
}

// scale sets the deployment's replicas.
func (f *fleet) scale(ctx context.Context, c client.Client, replicas int32) error {
	f.replicas = replicas
	return f.patch(ctx, c, fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
}

// roll switches the deployment to its other class: a rolling update of
// every machine.
func (f *fleet) roll(ctx context.Context, c client.Client) error {
	next := f.classes[0]
	if f.class == next {
		next = f.classes[1]
	}
	f.class = next
	return f.patch(ctx, c, fmt.Sprintf(`{"spec":{"template":{"spec":{"class":{"name":%q}}}}}`, next))
}

func (f *fleet) patch(ctx context.Context, c client.Client, patch string) error {
	md := &v1alpha1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: deploymentName}}
	if err := c.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("patching MachineDeployment %s/%s with %s: %w", f.namespace, deploymentName, patch, err)
	}
	return nil
}

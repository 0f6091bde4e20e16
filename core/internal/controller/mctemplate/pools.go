package mctemplate

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// builtInRoles are the roles whose pools the controller creates.
var builtInRoles = []string{mcfgv1.MasterRole, mcfgv1.WorkerRole}

// builtInPool is the pool of role as MCO's installer creates it: the
// MachineConfigs of the role, the Nodes labelled
// node-role.kubernetes.io/<role>, and the labels that KubeletConfigs and
// ContainerRuntimeConfigs written for OpenShift select.
func builtInPool(role string) *mcfgv1.MachineConfigPool {
	return &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{
			Name:   role,
			Labels: map[string]string{mcfgv1.PoolOperatorLabelPrefix + role: "", mcfgv1.BuiltInPoolLabel: ""},
		},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.RoleLabel: role}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + role: ""}},
		},
	}
}

// ensurePools creates the built-in pools that are missing; existing ones
// are the user's to change and are left as they are.
func (r *Reconciler) ensurePools(ctx context.Context) ([]string, error) {
	var created []string
	for _, role := range builtInRoles {
		err := r.Client.Get(ctx, client.ObjectKey{Name: role}, &mcfgv1.MachineConfigPool{})
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return created, fmt.Errorf("reading pool %s: %w", role, err)
		}
		if err := r.Client.Create(ctx, builtInPool(role)); err != nil && !apierrors.IsAlreadyExists(err) {
			return created, fmt.Errorf("creating pool %s: %w", role, err)
		}
		created = append(created, role)
	}
	return created, nil
}

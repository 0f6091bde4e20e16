package virtualnode

import (
	"context"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/sdk"
)

// checkRequest validates what the driver needs of a request's machine and
// class. The SDK's server validates requests in full before they arrive;
// this keeps direct callers from reaching the API server with empty names.
func checkRequest(m *driverv1alpha1.Machine, c *driverv1alpha1.MachineClass) error {
	switch {
	case m.GetName() == "":
		return sdk.InvalidArgument("machine.name is required")
	case m.GetNamespace() == "":
		return sdk.InvalidArgument("machine.namespace is required")
	case c.GetName() == "":
		return sdk.InvalidArgument("machine_class.name is required")
	case c.GetNamespace() == "":
		return sdk.InvalidArgument("machine_class.namespace is required")
	}
	return nil
}

// checkSameNamespace refuses a create whose class is in another namespace
// than its machine: the Node would carry that namespace's class tags, where
// no Machine claims it (§4.9).
func checkSameNamespace(m *driverv1alpha1.Machine, c *driverv1alpha1.MachineClass) error {
	if c.GetNamespace() != m.GetNamespace() {
		return sdk.InvalidArgument("machine_class.namespace %q must equal machine.namespace %q", c.GetNamespace(), m.GetNamespace())
	}
	return nil
}

// CreateMachine registers the Node of a machine, or returns the one that
// exists when it was created for the same machine (namespace and name) and
// provider spec. The class name is not compared (§6.1.3, §11.8).
func (d *Driver) CreateMachine(ctx context.Context, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	m, class := req.GetMachine(), req.GetMachineClass()
	if err := checkRequest(m, class); err != nil {
		return nil, err
	}
	if err := checkSameNamespace(m, class); err != nil {
		return nil, err
	}
	spec, err := parseProviderSpec(class.GetProviderSpec())
	if err != nil {
		return nil, err
	}
	cl, err := d.clusters.forSecrets(req.GetSecrets())
	if err != nil {
		return nil, err
	}
	nodes := cl.client.CoreV1().Nodes()

	existing, err := nodes.Get(ctx, m.GetName(), metav1.GetOptions{})
	switch {
	case err == nil:
		return adopt(existing, m, spec.hash)
	case !apierrors.IsNotFound(err):
		return nil, apiError(err, "reading Node "+m.GetName())
	}

	want, err := nodeFor(req, spec, time.Now())
	if err != nil {
		return nil, err
	}
	created, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Someone else created it since the read: judge that one.
		if existing, err = nodes.Get(ctx, m.GetName(), metav1.GetOptions{}); err != nil {
			return nil, apiError(err, "reading Node "+m.GetName())
		}
		return adopt(existing, m, spec.hash)
	}
	if err != nil {
		return nil, apiError(err, "creating Node "+m.GetName())
	}
	d.log.Info("created virtual node", "machine", machineKey(m), "node", created.Name, "providerID", created.Spec.ProviderID,
		"bootDelay", spec.bootDelay)
	// The simulated kubelet takes over from here: its first beat is at the
	// end of the boot.
	d.kubelets.created(cl, created)
	return &driverv1alpha1.CreateMachineResponse{
		ProviderId: created.Spec.ProviderID,
		NodeName:   created.Name,
		Addresses:  protoAddresses(want.Status.Addresses),
	}, nil
}

// adopt answers a create request for which a Node exists already.
func adopt(node *corev1.Node, m *driverv1alpha1.Machine, specHash string) (*driverv1alpha1.CreateMachineResponse, error) {
	// A VM being deleted is gone, but its Node still holds the name the new
	// one needs: the core retries ABORTED after a few seconds.
	if node.DeletionTimestamp != nil && node.Annotations[AnnotationMachine] != "" {
		return nil, status.Errorf(codes.Aborted, "Node %q is being deleted; retry once it is gone", node.Name)
	}
	if why := ownership(node, m, specHash); why != "" {
		return nil, status.Errorf(codes.AlreadyExists, "Node %q %s", node.Name, why)
	}
	return &driverv1alpha1.CreateMachineResponse{
		ProviderId: node.Spec.ProviderID,
		NodeName:   node.Name,
		Addresses:  protoAddresses(node.Status.Addresses),
	}, nil
}

// DeleteMachine deletes the Node of a machine. A Node that is gone, being
// deleted (a finalizer may keep it a while), or not the machine's VM counts
// as deleted.
func (d *Driver) DeleteMachine(ctx context.Context, req *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	m := req.GetMachine()
	if err := checkRequest(m, req.GetMachineClass()); err != nil {
		return nil, err
	}
	cl, err := d.clusters.forSecrets(req.GetSecrets())
	if err != nil {
		return nil, err
	}
	nodes := cl.client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, m.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &driverv1alpha1.DeleteMachineResponse{}, nil
	}
	if err != nil {
		return nil, apiError(err, "reading Node "+m.GetName())
	}
	if !isVMOf(node, m) {
		return &driverv1alpha1.DeleteMachineResponse{}, nil
	}
	// The UID precondition keeps a Node that replaced this one since the
	// read from being deleted in its stead. The driver puts no finalizer on
	// its Nodes, so it has none to remove; those of others (the core's
	// node finalizer) stay and are respected.
	err = nodes.Delete(ctx, node.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &node.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return nil, apiError(err, "deleting Node "+node.Name)
	}
	// The Lease is owned by the Node and would be garbage collected; delete
	// it now for clusters that run no garbage collector.
	err = cl.client.CoordinationV1().Leases(leaseNamespace).Delete(ctx, node.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		d.log.Debug("deleting the lease of a virtual node failed", "node", node.Name, "error", err)
	}
	d.log.Info("deleted virtual node", "machine", machineKey(m), "node", node.Name)
	return &driverv1alpha1.DeleteMachineResponse{}, nil
}

// GetMachineStatus reports the Node of a machine, NOT_FOUND when there is
// no live Node of this driver for it.
func (d *Driver) GetMachineStatus(ctx context.Context, req *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	m := req.GetMachine()
	if err := checkRequest(m, req.GetMachineClass()); err != nil {
		return nil, err
	}
	cl, err := d.clusters.forSecrets(req.GetSecrets())
	if err != nil {
		return nil, err
	}
	node, err := cl.client.CoreV1().Nodes().Get(ctx, m.GetName(), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, apiError(err, "reading Node "+m.GetName())
	}
	if err != nil || !isVMOf(node, m) {
		return nil, status.Errorf(codes.NotFound, "no virtual node for machine %s", machineKey(m))
	}
	return &driverv1alpha1.GetMachineStatusResponse{
		ProviderId: node.Spec.ProviderID,
		NodeName:   node.Name,
		Addresses:  protoAddresses(node.Status.Addresses),
	}, nil
}

// ListMachines lists the live Nodes of a machine class, by the class's
// namespace and name.
func (d *Driver) ListMachines(ctx context.Context, req *driverv1alpha1.ListMachinesRequest) (*driverv1alpha1.ListMachinesResponse, error) {
	className, classNamespace := req.GetMachineClass().GetName(), req.GetMachineClass().GetNamespace()
	switch {
	case className == "":
		return nil, sdk.InvalidArgument("machine_class.name is required")
	case classNamespace == "":
		return nil, sdk.InvalidArgument("machine_class.namespace is required")
	}
	cl, err := d.clusters.forSecrets(req.GetSecrets())
	if err != nil {
		return nil, err
	}
	list, err := cl.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{
		LabelSelector: LabelClass + "=" + classLabelValue(className) + "," + LabelClassNamespace + "=" + classNamespace,
	})
	if err != nil {
		return nil, apiError(err, "listing Nodes")
	}
	resp := &driverv1alpha1.ListMachinesResponse{}
	for _, node := range list.Items {
		// The label may be a hash: the annotation has the full name.
		if node.DeletionTimestamp != nil || node.Annotations[AnnotationClassName] != className ||
			!strings.HasPrefix(node.Spec.ProviderID, ProviderIDPrefix) {
			continue
		}
		resp.Machines = append(resp.Machines, &driverv1alpha1.ListedMachine{
			ProviderId: node.Spec.ProviderID, MachineName: machineNameOf(&node),
		})
	}
	slices.SortFunc(resp.Machines, func(a, b *driverv1alpha1.ListedMachine) int {
		return strings.Compare(a.GetMachineName(), b.GetMachineName())
	})
	return resp, nil
}

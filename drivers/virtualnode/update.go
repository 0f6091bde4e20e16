package virtualnode

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/sdk"
)

// UpdateMachine applies a class change to the running Node of a machine
// when only the provider spec's "labels" differ: the Node's labels of the
// old spec are replaced by those of the new one, and the Node records the
// new spec's hash. Any other difference answers needs_new_vm, the Node
// untouched. The driver keeps only a hash of the spec a Node was made from,
// so it compares old_machine_class with machine_class, after checking that
// the Node's hash is old_machine_class's (or already machine_class's: a
// repeat, answered applied).
func (d *Driver) UpdateMachine(ctx context.Context, req *driverv1alpha1.UpdateMachineRequest) (*driverv1alpha1.UpdateMachineResponse, error) {
	m := req.GetMachine()
	if err := checkRequest(m, req.GetMachineClass()); err != nil {
		return nil, err
	}
	if m.GetProviderId() == "" {
		return nil, sdk.InvalidArgument("machine.provider_id is required")
	}
	oldSpec, err := parseProviderSpec(req.GetOldMachineClass().GetProviderSpec())
	if err != nil {
		return nil, sdk.InvalidArgument("old_machine_class.provider_spec is not a provider spec of this driver")
	}
	newSpec, err := parseProviderSpec(req.GetMachineClass().GetProviderSpec())
	if err != nil {
		return nil, err
	}
	cl, err := d.clusters.forSecrets(req.GetSecrets())
	if err != nil {
		return nil, err
	}
	nodes := cl.client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, m.GetName(), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, apiError(err, "reading Node "+m.GetName())
	}
	if err != nil || !isVMOf(node, m) {
		return nil, status.Errorf(codes.NotFound, "no virtual node with provider ID %s for machine %s", m.GetProviderId(), machineKey(m))
	}
	applied := func() *driverv1alpha1.UpdateMachineResponse {
		return sdk.Applied(&driverv1alpha1.GetMachineStatusResponse{
			ProviderId: node.Spec.ProviderID,
			NodeName:   node.Name,
			Addresses:  protoAddresses(node.Status.Addresses),
		}, "")
	}
	switch node.Annotations[AnnotationProviderSpecHash] {
	case newSpec.hash:
		return applied(), nil
	case oldSpec.hash:
	default:
		return sdk.NeedsNewVM("the Node was made from another provider spec than old_machine_class"), nil
	}
	differ, err := differingKeys(req.GetOldMachineClass().GetProviderSpec(), req.GetMachineClass().GetProviderSpec())
	if err != nil {
		return nil, err
	}
	if fixed := slices.DeleteFunc(differ, func(k string) bool { return k == "labels" }); len(fixed) > 0 {
		return sdk.NeedsNewVM(fmt.Sprintf("provider spec keys %s differ and cannot change on a running Node (only labels can)", strings.Join(fixed, ", "))), nil
	}
	for k := range oldSpec.labels {
		delete(node.Labels, k)
	}
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	maps.Copy(node.Labels, newSpec.labels)
	node.Annotations[AnnotationProviderSpecHash] = newSpec.hash
	// The update carries the resourceVersion read: a Node changed since
	// (a heartbeat) answers ABORTED, and the core calls again.
	if node, err = nodes.Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) {
			return nil, status.Errorf(codes.Aborted, "Node %s changed while it was updated; retry", m.GetName())
		}
		return nil, apiError(err, "updating Node "+m.GetName())
	}
	d.log.Info("updated virtual node", "machine", machineKey(m), "node", node.Name)
	return applied(), nil
}

// differingKeys returns the top-level keys whose values differ between two
// provider specs (a key in one only differs), sorted.
func differingKeys(a, b []byte) ([]string, error) {
	var ma, mb map[string]json.RawMessage
	if err := json.Unmarshal(a, &ma); err != nil {
		return nil, sdk.InvalidArgument("old_machine_class.provider_spec must be a JSON object")
	}
	if err := json.Unmarshal(b, &mb); err != nil {
		return nil, sdk.InvalidArgument("machine_class.provider_spec must be a JSON object")
	}
	var keys []string
	for k, v := range ma {
		if w, ok := mb[k]; !ok || !sameJSON(v, w) {
			keys = append(keys, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// sameJSON compares two JSON values as canonical JSON.
func sameJSON(a, b json.RawMessage) bool {
	ca, errA := sdk.CanonicalProviderSpec(a)
	cb, errB := sdk.CanonicalProviderSpec(b)
	if errA != nil || errB != nil {
		return string(a) == string(b)
	}
	return string(ca) == string(cb)
}

package virtualnode

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"maps"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/sdk"
)

// defaultCapacity is the capacity of a Node whose class states none.
var defaultCapacity = map[string]string{"cpu": "2", "memory": "4Gi", "pods": "110"}

// kubeletVersion is what the Nodes report as their kubelet version.
const kubeletVersion = "v1.37.1-virtualnode"

// newProviderID returns the provider ID of a new VM of machine m. The random
// incarnation at its end keeps a VM created after the deletion of another
// of the same name from reusing its provider ID (Driver API §4.8).
func newProviderID(m *driverv1alpha1.Machine) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return ProviderIDPrefix + m.GetNamespace() + "/" + m.GetName() + "/" + hex.EncodeToString(b)
}

// machineKey is the value of AnnotationMachine for m.
func machineKey(m *driverv1alpha1.Machine) string {
	return m.GetNamespace() + "/" + m.GetName()
}

// classLabelValue returns the LabelClass value of a class: its name when
// that is a valid label value, else a hash of it (class names may be 253
// characters long, label values only 63).
func classLabelValue(className string) string {
	if len(validation.IsValidLabelValue(className)) == 0 {
		return className
	}
	sum := sha256.Sum256([]byte(className))
	return "sha256-" + hex.EncodeToString(sum[:])[:56]
}

// hostnameLabelValue returns the kubernetes.io/hostname label of a Node
// named name: the name when it is a valid label value, else its first DNS
// label (the host name of a fully qualified name), else a hash. Machine
// names may be 253 characters long (§4.3 of the Driver API), label values
// only 63: the Node must still be created.
func hostnameLabelValue(name string) string {
	if len(validation.IsValidLabelValue(name)) == 0 {
		return name
	}
	if host, _, _ := strings.Cut(name, "."); len(validation.IsValidLabelValue(host)) == 0 {
		return host
	}
	return classLabelValue(name)
}

// nodeFor builds the Node that is the VM of a create request.
func nodeFor(req *driverv1alpha1.CreateMachineRequest, spec providerSpec, now time.Time) (*corev1.Node, error) {
	m, class := req.GetMachine(), req.GetMachineClass()
	capacity, err := capacityFor(class, spec)
	if err != nil {
		return nil, err
	}

	labels := map[string]string{
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: "amd64",
	}
	if t := class.GetNodeTemplate(); t != nil {
		setIf(labels, corev1.LabelInstanceTypeStable, t.GetInstanceType())
		setIf(labels, corev1.LabelTopologyRegion, t.GetRegion())
		setIf(labels, corev1.LabelTopologyZone, t.GetZone())
		setIf(labels, corev1.LabelArchStable, t.GetArchitecture())
	}
	maps.Copy(labels, spec.labels)
	maps.Copy(labels, m.GetNodeTemplate().GetLabels())
	labels[corev1.LabelHostname] = hostnameLabelValue(m.GetName())
	labels[LabelClass] = classLabelValue(class.GetName())
	labels[LabelClassNamespace] = class.GetNamespace()

	annotations := maps.Clone(m.GetNodeTemplate().GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	readyAfter := now.Add(spec.bootDelay).UTC()
	annotations[AnnotationMachine] = machineKey(m)
	annotations[AnnotationClassName] = class.GetName()
	annotations[AnnotationProviderSpecHash] = spec.hash
	annotations[AnnotationReadyAfter] = readyAfter.Format(time.RFC3339Nano)
	if ip := spec.inPlace; ip != nil {
		annotations[AnnotationInPlaceUpdateDuration] = ip.duration.String()
		annotations[AnnotationInPlaceFailureRate] = strconv.FormatFloat(ip.failureRate, 'g', -1, 64)
	}
	if mc := spec.machineConfig; mc != nil {
		annotations[AnnotationMachineConfigDuration] = mc.duration.String()
		annotations[AnnotationMachineConfigFailureRate] = strconv.FormatFloat(mc.failureRate, 'g', -1, 64)
	}

	var taints []corev1.Taint
	for _, t := range m.GetNodeTemplate().GetTaints() {
		taints = append(taints, corev1.Taint{Key: t.GetKey(), Value: t.GetValue(), Effect: corev1.TaintEffect(t.GetEffect())})
	}

	providerID := newProviderID(m)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Labels: labels, Annotations: annotations},
		Spec:       corev1.NodeSpec{ProviderID: providerID, Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Addresses:   nodeAddresses(m, providerID),
			NodeInfo: corev1.NodeSystemInfo{
				MachineID:       machineKey(m),
				SystemUUID:      machineKey(m),
				KubeletVersion:  kubeletVersion,
				OperatingSystem: "linux",
				Architecture:    labels[corev1.LabelArchStable],
				OSImage:         "machina virtual node",
			},
		},
	}
	node.Status.Conditions = nextConditions(node, now)
	return node, nil
}

func setIf(m map[string]string, key, value string) {
	if value != "" {
		m[key] = value
	}
}

// capacityFor merges the class's node template capacity with the provider
// spec's, which wins per resource.
func capacityFor(class *driverv1alpha1.MachineClass, spec providerSpec) (corev1.ResourceList, error) {
	merged := map[string]string{}
	maps.Copy(merged, class.GetNodeTemplate().GetCapacity())
	maps.Copy(merged, spec.capacity)
	if len(merged) == 0 {
		merged = defaultCapacity
	}
	out := corev1.ResourceList{}
	for name, value := range merged {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, sdk.InvalidArgument("capacity %s: %q is not a quantity", name, value)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// nodeAddresses returns a made-up InternalIP in 10.0.0.0/8, derived from
// the provider ID, and the Hostname.
func nodeAddresses(m *driverv1alpha1.Machine, providerID string) []corev1.NodeAddress {
	h := fnv.New32a()
	_, _ = h.Write([]byte(providerID))
	sum := h.Sum32()
	ip := netip.AddrFrom4([4]byte{10, byte(sum >> 16), byte(sum >> 8), byte(sum)})
	return []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: ip.String()},
		{Type: corev1.NodeHostName, Address: m.GetName()},
	}
}

// protoAddresses converts Node addresses for a response.
func protoAddresses(addrs []corev1.NodeAddress) []*driverv1alpha1.NodeAddress {
	out := make([]*driverv1alpha1.NodeAddress, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, &driverv1alpha1.NodeAddress{Type: string(a.Type), Address: a.Address})
	}
	return out
}

// ownership says why node is not the VM of a create request with the given
// machine and spec hash, or returns "" when it is. The machine key holds the
// namespace: a Node of a Machine of another namespace is never returned
// (§6.1.3). The class name is not compared: a Machine whose class was
// changed, with the same provider spec, keeps its VM, which stays listed
// under its original class (§11.8).
func ownership(node *corev1.Node, m *driverv1alpha1.Machine, specHash string) string {
	switch got := node.Annotations[AnnotationMachine]; {
	case got == "":
		return "was not created by this driver"
	case got != machineKey(m):
		return fmt.Sprintf("belongs to machine %s", got)
	case node.Annotations[AnnotationProviderSpecHash] != specHash:
		return "was created with another provider spec"
	}
	return ""
}

// isVMOf reports whether node is the live VM of machine m: created by this
// driver for m, not being deleted, and with m's provider ID when m has one.
func isVMOf(node *corev1.Node, m *driverv1alpha1.Machine) bool {
	switch {
	case node.Annotations[AnnotationMachine] != machineKey(m):
		return false
	case node.DeletionTimestamp != nil:
		return false
	case m.GetProviderId() != "" && m.GetProviderId() != node.Spec.ProviderID:
		return false
	}
	return true
}

// machineNameOf returns the machine name of one of the driver's Nodes.
func machineNameOf(node *corev1.Node) string {
	key := node.Annotations[AnnotationMachine]
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[i+1:]
	}
	return key
}

package machinedeployment

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"strconv"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// rollingPart returns the parts of a template whose change starts a rollout:
// everything except the template-hash label, the node template, the machine
// configuration and the class kind. Those four are applied to existing machine
// sets and machines in place, as MCM does, so a new timeout or node label does
// not replace every machine.
func rollingPart(t *v1alpha1.MachineTemplateSpec) *v1alpha1.MachineTemplateSpec {
	c := t.DeepCopy()
	delete(c.Labels, v1alpha1.DefaultMachineDeploymentUniqueLabelKey)
	if len(c.Labels) == 0 {
		c.Labels = nil
	}
	c.Spec.NodeTemplateSpec = v1alpha1.NodeTemplateSpec{}
	c.Spec.MachineConfiguration = nil
	c.Spec.Class.Kind = ""
	return c
}

// templateHash returns the template hash: the FNV-32a hash of the JSON of the
// template's rolling part and the collision count, in decimal (the form MCM
// writes). JSON is stable across Go versions and does not change when a new
// optional field is added and left unset, so machine sets keep their hash
// across upgrades.
//
// rolloutAfter is the deployment's spec.rolloutAfter once it has passed (nil
// before, and without one): it goes into the hash, as in Cluster API, so that
// the set a restart creates gets a name of its own next to the set of the
// same template it replaces. A deployment without it keeps its hash.
func templateHash(t *v1alpha1.MachineTemplateSpec, collisionCount *int32, rolloutAfter *metav1.Time) string {
	h := fnv.New32a()
	data, err := json.Marshal(rollingPart(t))
	if err != nil {
		// A template that came from the API server always encodes.
		panic("machinedeployment: encoding a template: " + err.Error())
	}
	_, _ = h.Write(data)
	if collisionCount != nil {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(*collisionCount))
		_, _ = h.Write(b[:])
	}
	if rolloutAfter != nil {
		_, _ = h.Write([]byte(rolloutAfter.UTC().Format(time.RFC3339)))
	}
	return strconv.FormatUint(uint64(h.Sum32()), 10)
}

// sameRollingTemplate reports whether a machine set's template is the
// deployment's template as far as rollouts are concerned.
func sameRollingTemplate(a, b *v1alpha1.MachineTemplateSpec) bool {
	return apiequality.Semantic.DeepEqual(rollingPart(a), rollingPart(b))
}

// machineSetName returns "<deployment>-<5 characters of the encoded hash>",
// cutting the deployment name so that the name of a machine of the set
// ("<set>-<5 random characters>") is still a valid object name.
func machineSetName(deploymentName, hash string) string {
	suffix := rand.SafeEncodeString(hash)
	if len(suffix) > 5 {
		suffix = suffix[:5]
	}
	maxPrefix := validation.DNS1123SubdomainMaxLength - 2*(1+5)
	if len(deploymentName) > maxPrefix {
		deploymentName = deploymentName[:maxPrefix]
	}
	return deploymentName + "-" + suffix
}

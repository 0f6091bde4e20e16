package v1alpha1_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

const ns = "mcm-compat"

// TestAPIOnKubeAPIServer installs the generated CRDs in a real kube-apiserver
// and checks that MCM manifests apply unchanged, read back into the Go types
// without losing a field, and that the subresources, printer columns and
// schema validation behave as an MCM user expects.
func TestAPIOnKubeAPIServer(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	c := env.Client
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	t.Run("discovery", func(t *testing.T) { testDiscovery(t, env.Config) })
	t.Run("manifests round-trip", func(t *testing.T) { testManifestsRoundTrip(t, ctx, c, env.Scheme) })
	t.Run("typed fields", func(t *testing.T) { testTypedFields(t, ctx, c) })
	t.Run("machine status subresource", func(t *testing.T) { testMachineStatus(t, ctx, c) })
	t.Run("machineset status uses MCM names", func(t *testing.T) { testMachineSetStatus(t, ctx, c) })
	t.Run("scale subresource", func(t *testing.T) { testScale(t, ctx, c) })
	t.Run("printer columns", func(t *testing.T) { testPrinterColumns(t, ctx, c, env.Config) })
	t.Run("schema rejects invalid objects", func(t *testing.T) { testSchemaRejects(t, ctx, c) })
	t.Run("schema admits durations at the bounds", func(t *testing.T) { testDurationBounds(t, ctx, c) })
}

func testDiscovery(t *testing.T, cfg *rest.Config) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	list, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
	require.NoError(t, err)
	got := map[string][]string{}
	for _, r := range list.APIResources {
		got[r.Name] = r.ShortNames
	}
	want := map[string][]string{
		"machines":                  {"mc"},
		"machines/status":           nil,
		"machineclasses":            {"mcc"},
		"machineclasses/status":     nil,
		"machinesets":               {"mcs"},
		"machinesets/status":        nil,
		"machinesets/scale":         nil,
		"machinedeployments":        {"mcd"},
		"machinedeployments/status": nil,
		"machinedeployments/scale":  nil,
	}
	assert.Equal(t, want, got)
}

// testManifestsRoundTrip creates every fixture and checks, field by field,
// that neither the API server (schema pruning) nor the Go types (JSON names)
// drop or change anything the manifest says.
func testManifestsRoundTrip(t *testing.T, ctx context.Context, c client.Client, scheme *runtime.Scheme) {
	for _, file := range []string{"machineclass.yaml", "machine.yaml", "machineset.yaml", "machinedeployment.yaml"} {
		for _, manifest := range loadFixtures(t, file, ns) {
			name := manifest.GetKind() + "/" + manifest.GetName()
			t.Run(name, func(t *testing.T) {
				require.NoError(t, c.Create(ctx, manifest.DeepCopy()), "create %s", name)

				stored := &unstructured.Unstructured{}
				stored.SetGroupVersionKind(manifest.GroupVersionKind())
				require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(manifest), stored))
				requireContainsAll(t, name+" as stored by the API server", manifest.Object, stored.Object, false)

				typed, err := scheme.New(manifest.GroupVersionKind())
				require.NoError(t, err)
				require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(manifest), typed.(client.Object)))
				asMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
				require.NoError(t, err)
				// The client does not fill in the type meta of typed objects,
				// and omitempty drops zero values (replicas: 0), as in MCM's
				// types: both are compared without.
				manifestBody := manifest.DeepCopy()
				unstructured.RemoveNestedField(manifestBody.Object, "apiVersion")
				unstructured.RemoveNestedField(manifestBody.Object, "kind")
				requireContainsAll(t, name+" read into the Go type", manifestBody.Object, asMap, true)
			})
		}
	}
}

// testTypedFields checks that MCM's JSON names land in the intended Go
// fields (the round trip alone would not notice two fields swapped).
func testTypedFields(t *testing.T, ctx context.Context, c client.Client) {
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

	var mcc v1alpha1.MachineClass
	require.NoError(t, c.Get(ctx, key("test-aws"), &mcc))
	assert.Equal(t, "AWS", mcc.Provider)
	require.NotNil(t, mcc.SecretRef)
	assert.Equal(t, "test-aws-userdata", mcc.SecretRef.Name)
	require.NotNil(t, mcc.CredentialsSecretRef)
	assert.Equal(t, "test-aws-credentials", mcc.CredentialsSecretRef.Name)
	var spec map[string]any
	require.NoError(t, json.Unmarshal(mcc.ProviderSpec.Raw, &spec))
	assert.Equal(t, "m5.large", spec["machineType"])
	require.NotNil(t, mcc.NodeTemplate)
	assert.True(t, mcc.NodeTemplate.Capacity.Memory().Equal(resource.MustParse("8Gi")))
	assert.Equal(t, "eu-west-1a", mcc.NodeTemplate.Zone)
	require.NotNil(t, mcc.NodeTemplate.Architecture)
	assert.Equal(t, "amd64", *mcc.NodeTemplate.Architecture)

	var m v1alpha1.Machine
	require.NoError(t, c.Get(ctx, key("test-machine"), &m))
	assert.Equal(t, v1alpha1.ClassSpec{APIGroup: "machine.sapcloud.io", Kind: "MachineClass", Name: "test-aws"}, m.Spec.Class)
	require.NotNil(t, m.Spec.MachineConfiguration)
	cfg := m.Spec.MachineConfiguration
	assert.Equal(t, 2*time.Hour, cfg.MachineDrainTimeout.Duration)
	assert.Equal(t, 10*time.Minute, cfg.MachineHealthTimeout.Duration)
	assert.Equal(t, 20*time.Minute, cfg.MachineCreationTimeout.Duration)
	assert.Equal(t, 30*time.Minute, cfg.MachineInPlaceUpdateTimeout.Duration)
	assert.Equal(t, 96*time.Hour, cfg.MachinePreserveTimeout.Duration)
	assert.Equal(t, false, *cfg.DisableHealthTimeout)
	assert.Equal(t, int32(30), *cfg.MaxEvictRetries)
	assert.Equal(t, "KernelDeadlock,ReadonlyFilesystem,DiskPressure,NetworkUnavailable", *cfg.NodeConditions)
	assert.Equal(t, "worker", m.Spec.NodeTemplateSpec.Labels["node.kubernetes.io/role"])
	assert.Equal(t, "team-a", m.Spec.NodeTemplateSpec.Annotations["example.com/owner"])
	assert.Equal(t, []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}, m.Spec.NodeTemplateSpec.Spec.Taints)

	var ints, percent, recreate, inplace v1alpha1.MachineDeployment
	require.NoError(t, c.Get(ctx, key("test-mcd-ints"), &ints))
	assert.Equal(t, v1alpha1.RollingUpdateMachineDeploymentStrategyType, ints.Spec.Strategy.Type)
	require.NotNil(t, ints.Spec.Strategy.RollingUpdate)
	assert.Equal(t, intstr.FromInt32(1), *ints.Spec.Strategy.RollingUpdate.MaxSurge)
	assert.Equal(t, intstr.FromInt32(0), *ints.Spec.Strategy.RollingUpdate.MaxUnavailable)
	assert.Equal(t, int32(5), *ints.Spec.RevisionHistoryLimit)
	assert.Equal(t, int32(600), *ints.Spec.ProgressDeadlineSeconds)
	assert.Equal(t, int32(1), *ints.Spec.AutoPreserveFailedMachineMax)
	assert.Equal(t, "1", ints.Spec.Template.Annotations["example.com/rollout"])
	assert.Equal(t, 20*time.Minute, ints.Spec.Template.Spec.MachineCreationTimeout.Duration)

	require.NoError(t, c.Get(ctx, key("test-mcd-percent"), &percent))
	assert.Equal(t, intstr.FromString("50%"), *percent.Spec.Strategy.RollingUpdate.MaxSurge)
	assert.Equal(t, intstr.FromString("25%"), *percent.Spec.Strategy.RollingUpdate.MaxUnavailable)

	require.NoError(t, c.Get(ctx, key("test-mcd-recreate"), &recreate))
	assert.Equal(t, v1alpha1.RecreateMachineDeploymentStrategyType, recreate.Spec.Strategy.Type)
	assert.True(t, recreate.Spec.Paused)
	assert.Equal(t, int32(0), recreate.Spec.Replicas)

	require.NoError(t, c.Get(ctx, key("test-mcd-inplace"), &inplace))
	require.NotNil(t, inplace.Spec.Strategy.InPlaceUpdate)
	assert.Equal(t, v1alpha1.OrchestrationTypeManual, inplace.Spec.Strategy.InPlaceUpdate.OrchestrationType)
	assert.Equal(t, intstr.FromInt32(1), *inplace.Spec.Strategy.InPlaceUpdate.MaxUnavailable)
}

// testMachineStatus writes the status, MCM fields and machina additions,
// through the status subresource and checks both directions of the split:
// status writes ignore spec changes, spec writes ignore status changes.
func testMachineStatus(t *testing.T, ctx context.Context, c client.Client) {
	var m v1alpha1.Machine
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "test-machine"}, &m))

	now := metav1.NewTime(time.Now().Truncate(time.Second))
	m.Status = v1alpha1.MachineStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
		LastOperation: v1alpha1.LastOperation{
			Description: "Machine test-machine successfully joined the cluster",
			State:       v1alpha1.MachineStateSuccessful, Type: v1alpha1.MachineOperationCreate, LastUpdateTime: now,
		},
		CurrentStatus:         v1alpha1.CurrentStatus{Phase: v1alpha1.MachineRunning, LastUpdateTime: now},
		LastKnownState:        `{"vm":"i-0123"}`,
		DeletionStep:          v1alpha1.DeletionStepDrain,
		DeletionStepStartTime: &now,
		UnhealthySince:        &now,
		MachineConditions: []metav1.Condition{{
			Type: v1alpha1.MachineConditionDrained, Status: metav1.ConditionFalse, Reason: "PodsRemaining",
			Message: "3 of 5 pods evicted", LastTransitionTime: now,
		}},
	}
	m.Spec.ProviderID = "changed-through-status" // must be ignored by the status subresource
	require.NoError(t, c.Status().Update(ctx, &m))

	var got v1alpha1.Machine
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(&m), &got))
	assert.Empty(t, got.Spec.ProviderID, "a status update must not change the spec")
	assert.Equal(t, v1alpha1.MachineRunning, got.Status.CurrentStatus.Phase)
	assert.Equal(t, v1alpha1.MachineStateSuccessful, got.Status.LastOperation.State)
	assert.Equal(t, `{"vm":"i-0123"}`, got.Status.LastKnownState)
	assert.Equal(t, v1alpha1.DeletionStepDrain, got.Status.DeletionStep)
	require.NotNil(t, got.Status.UnhealthySince)
	assert.True(t, now.Equal(got.Status.UnhealthySince))
	require.NotNil(t, got.Status.DeletionStepStartTime)
	assert.True(t, now.Equal(got.Status.DeletionStepStartTime))
	require.Len(t, got.Status.MachineConditions, 1)
	assert.Equal(t, "3 of 5 pods evicted", got.Status.MachineConditions[0].Message)
	require.Len(t, got.Status.Conditions, 1)
	assert.Equal(t, corev1.NodeReady, got.Status.Conditions[0].Type)

	got.Spec.ProviderID = "aws:///eu-west-1/i-0123"
	got.Status.CurrentStatus.Phase = v1alpha1.MachineFailed // must be ignored by a spec update
	require.NoError(t, c.Update(ctx, &got))
	var again v1alpha1.Machine
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(&m), &again))
	assert.Equal(t, "aws:///eu-west-1/i-0123", again.Spec.ProviderID)
	assert.Equal(t, v1alpha1.MachineRunning, again.Status.CurrentStatus.Phase, "a spec update must not change the status")
}

// testMachineSetStatus checks that MachineSet conditions travel under MCM's
// JSON name machineSetCondition.
func testMachineSetStatus(t *testing.T, ctx context.Context, c client.Client) {
	var ms v1alpha1.MachineSet
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "test-machine-set"}, &ms))
	failed := []v1alpha1.MachineSummary{{
		Name: "test-machine-set-abcde", ProviderID: "aws:///i-1", OwnerRef: ms.Name,
		LastOperation: v1alpha1.LastOperation{Type: v1alpha1.MachineOperationCreate, State: v1alpha1.MachineStateFailed, ErrorCode: "ResourceExhausted"},
	}}
	ms.Status.Conditions = []v1alpha1.MachineSetCondition{{
		Type: v1alpha1.MachineSetFrozen, Status: v1alpha1.ConditionTrue, Reason: v1alpha1.OverShootingReplicaCount,
	}}
	ms.Status.FailedMachines = &failed
	require.NoError(t, c.Status().Update(ctx, &ms))

	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("MachineSet"))
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(&ms), u))
	conds, found, err := unstructured.NestedSlice(u.Object, "status", "machineSetCondition")
	require.NoError(t, err)
	require.True(t, found, "status.machineSetCondition missing: %v", u.Object["status"])
	require.Len(t, conds, 1)
	assert.Equal(t, "Frozen", conds[0].(map[string]any)["type"])
	code, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "failedMachines")
	require.Len(t, code, 1)
	assert.Equal(t, "ResourceExhausted", code.([]any)[0].(map[string]any)["lastOperation"].(map[string]any)["errorCode"])
}

// testScale reads and writes replicas through /scale, as kubectl scale, the
// HorizontalPodAutoscaler and other scalers do.
func testScale(t *testing.T, ctx context.Context, c client.Client) {
	cases := []struct {
		obj      client.Object
		selector string
		setReady func(client.Object)
	}{
		{&v1alpha1.MachineSet{}, "test-label=test-label", func(o client.Object) {
			ms := o.(*v1alpha1.MachineSet)
			ms.Status.Replicas, ms.Status.LabelSelector = 3, "test-label=test-label"
		}},
		{&v1alpha1.MachineDeployment{}, "test-label=test-mcd-ints", func(o client.Object) {
			d := o.(*v1alpha1.MachineDeployment)
			d.Status.Replicas, d.Status.LabelSelector = 3, "test-label=test-mcd-ints"
		}},
	}
	names := []string{"test-machine-set", "test-mcd-ints"}
	for i, tc := range cases {
		obj := tc.obj
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names[i]}, obj))
		tc.setReady(obj)
		require.NoError(t, c.Status().Update(ctx, obj))

		scale := &autoscalingv1.Scale{}
		require.NoError(t, c.SubResource("scale").Get(ctx, obj, scale))
		assert.Equal(t, int32(3), scale.Spec.Replicas, names[i])
		assert.Equal(t, int32(3), scale.Status.Replicas, names[i])
		assert.Equal(t, tc.selector, scale.Status.Selector, names[i])

		for _, replicas := range []int32{5, 0} {
			scale.Spec.Replicas = replicas
			require.NoError(t, c.SubResource("scale").Update(ctx, obj, client.WithSubResourceBody(scale)))
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(obj), obj))
			switch o := obj.(type) {
			case *v1alpha1.MachineSet:
				assert.Equal(t, replicas, o.Spec.Replicas, names[i])
			case *v1alpha1.MachineDeployment:
				assert.Equal(t, replicas, o.Spec.Replicas, names[i])
			}
		}
	}
}

// testPrinterColumns asks the API server for the table kubectl get prints.
func testPrinterColumns(t *testing.T, ctx context.Context, c client.Client, cfg *rest.Config) {
	var m v1alpha1.Machine
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "test-machine"}, &m))
	m.Labels[v1alpha1.NodeLabelKey] = "node-a"
	require.NoError(t, c.Update(ctx, &m))

	httpClient, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	table := func(resource string) *metav1.Table {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet,
			strings.TrimSuffix(cfg.Host, "/")+"/apis/machine.sapcloud.io/v1alpha1/namespaces/"+ns+"/"+resource, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		resp, err := httpClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", req.URL, body)
		var tbl metav1.Table
		require.NoError(t, json.Unmarshal(body, &tbl))
		return &tbl
	}
	columns := func(tbl *metav1.Table) []string {
		var names []string
		for _, col := range tbl.ColumnDefinitions {
			names = append(names, col.Name)
		}
		return names
	}

	machines := table("machines")
	assert.Equal(t, []string{"Name", "Status", "Age", "Node", "ProviderID"}, columns(machines))
	require.Len(t, machines.Rows, 1)
	assert.Equal(t, []any{"test-machine", "Running"}, machines.Rows[0].Cells[:2])
	assert.Equal(t, []any{"node-a", "aws:///eu-west-1/i-0123"}, machines.Rows[0].Cells[3:])

	assert.Equal(t, []string{"Name", "Provider", "Age"}, columns(table("machineclasses")))
	assert.Equal(t, []string{"Name", "Desired", "Current", "Ready", "Available", "Age"}, columns(table("machinesets")))
	deployments := table("machinedeployments")
	assert.Equal(t, []string{"Name", "Ready", "Desired", "Up-to-date", "Available", "Age"}, columns(deployments))
	names := make([]any, 0, len(deployments.Rows))
	for _, row := range deployments.Rows {
		names = append(names, row.Cells[0])
	}
	assert.True(t, slices.Contains(names, any("test-mcd-percent")), "rows: %v", names)
}

// testSchemaRejects checks that the schema refuses what no MCM manifest
// contains, with the offending field named in the error.
func testSchemaRejects(t *testing.T, ctx context.Context, c client.Client) {
	fixture := func(file string) *unstructured.Unstructured { return loadFixtures(t, file, ns)[0] }
	cases := []struct {
		name    string
		obj     *unstructured.Unstructured
		mutate  func(map[string]any)
		status  bool // write the mutation through the status subresource
		message string
	}{
		{"negative MachineSet replicas", fixture("machineset.yaml"),
			func(o map[string]any) { set(o, int64(-1), "spec", "replicas") }, false, "spec.replicas"},
		{"negative MachineDeployment replicas", fixture("machinedeployment.yaml"),
			func(o map[string]any) { set(o, int64(-2), "spec", "replicas") }, false, "spec.replicas"},
		{"unknown strategy type", fixture("machinedeployment.yaml"),
			func(o map[string]any) { set(o, "Canary", "spec", "strategy", "type") }, false, "spec.strategy.type"},
		{"maxSurge neither number nor percentage", fixture("machinedeployment.yaml"),
			func(o map[string]any) { set(o, "one", "spec", "strategy", "rollingUpdate", "maxSurge") }, false, "maxSurge"},
		{"unknown orchestration type", fixture("machinedeployment.yaml"),
			func(o map[string]any) {
				set(o, map[string]any{"orchestrationType": "Sometimes"}, "spec", "strategy", "inPlaceUpdate")
			}, false, "orchestrationType"},
		{"deployment without template", fixture("machinedeployment.yaml"),
			func(o map[string]any) { unstructured.RemoveNestedField(o, "spec", "template") }, false, "spec.template"},
		{"machine without class name", fixture("machine.yaml"),
			func(o map[string]any) { unstructured.RemoveNestedField(o, "spec", "class", "name") }, false, "class.name is required"},
		{"machine without class", fixture("machine.yaml"),
			func(o map[string]any) { unstructured.RemoveNestedField(o, "spec", "class") }, false, "spec.class"},
		{"template without class name", fixture("machineset.yaml"),
			func(o map[string]any) { set(o, "", "spec", "template", "spec", "class", "name") }, false, "class.name is required"},
		{"malformed duration", fixture("machine.yaml"),
			func(o map[string]any) { set(o, "ten minutes", "spec", "drainTimeout") }, false, "spec.drainTimeout"},
		// The value that stopped a namespace: the old pattern admitted it,
		// Go cannot parse it (out of time.Duration's range).
		{"undecodable deployment duration", fixture("machinedeployment.yaml"),
			func(o map[string]any) { set(o, "9999999999h", "spec", "template", "spec", "drainTimeout") }, false, "spec.template.spec.drainTimeout"},
		{"negative duration", fixture("machine.yaml"),
			func(o map[string]any) { set(o, "-1s", "spec", "healthTimeout") }, false, "spec.healthTimeout"},
		{"duration over the maximum", fixture("machineset.yaml"),
			func(o map[string]any) { set(o, "87600h1s", "spec", "template", "spec", "creationTimeout") }, false, "must be a Go duration from 0s to 87600h"},
		{"class without providerSpec", fixture("machineclass.yaml"),
			func(o map[string]any) { unstructured.RemoveNestedField(o, "providerSpec") }, false, "providerSpec"},
		{"nodeTemplate without zone", fixture("machineclass.yaml"),
			func(o map[string]any) { unstructured.RemoveNestedField(o, "nodeTemplate", "zone") }, false, "nodeTemplate.zone"},
		{"unknown machine phase", fixture("machine.yaml"),
			func(o map[string]any) { set(o, "Exploded", "status", "currentStatus", "phase") }, true, "status.currentStatus.phase"},
		{"unknown deletion step", fixture("machine.yaml"),
			func(o map[string]any) { set(o, "Shred", "status", "deletionStep") }, true, "status.deletionStep"},
		{"unknown operation state", fixture("machine.yaml"),
			func(o map[string]any) { set(o, "Maybe", "status", "lastOperation", "state") }, true, "status.lastOperation.state"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.obj
			obj.SetName(obj.GetName() + "-invalid-" + string(rune('a'+i)))
			if tc.status {
				// The object itself is valid; the status write is not.
				require.NoError(t, c.Create(ctx, obj))
			}
			tc.mutate(obj.Object)
			var err error
			if tc.status {
				err = c.Status().Update(ctx, obj)
			} else {
				err = c.Create(ctx, obj)
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
			assert.Contains(t, err.Error(), tc.message)
		})
	}
}

// testDurationBounds checks that the bounds of the duration rule are
// admitted, and read back into the Go type as the values they are.
func testDurationBounds(t *testing.T, ctx context.Context, c client.Client) {
	obj := loadFixtures(t, "machine.yaml", ns)[0]
	obj.SetName("duration-bounds")
	set(obj.Object, "0s", "spec", "drainTimeout")
	set(obj.Object, "87600h", "spec", "machinePreserveTimeout")
	set(obj.Object, "1.5µs", "spec", "healthTimeout")
	require.NoError(t, c.Create(ctx, obj))
	m := &v1alpha1.Machine{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(obj), m))
	assert.Empty(t, m.Spec.MachineConfiguration.InvalidDurations())
	assert.Equal(t, time.Duration(0), m.Spec.MachineDrainTimeout.Duration)
	assert.Equal(t, v1alpha1.MaxDuration, m.Spec.MachinePreserveTimeout.Duration)
	assert.Equal(t, 1500*time.Nanosecond, m.Spec.MachineHealthTimeout.Duration)
}

func set(obj map[string]any, value any, fields ...string) {
	if err := unstructured.SetNestedField(obj, value, fields...); err != nil {
		panic(err)
	}
}

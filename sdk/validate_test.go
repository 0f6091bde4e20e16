package sdk

import (
	"strings"
	"testing"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// mutateCreate returns a valid create request changed by f.
func mutateCreate(f func(*driverv1alpha1.CreateMachineRequest)) *driverv1alpha1.CreateMachineRequest {
	r := validCreate("m")
	f(r)
	return r
}

func TestValidationOverTheSocket(t *testing.T) {
	d := fullDriver{newTestDriver()}
	r := startServer(t, newServer(t, d))

	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"machine missing", func() error {
			_, err := r.machines().CreateMachine(callCtx(t), mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.Machine = nil }))
			return err
		}, "machine is required"},
		{"machine name missing", func() error {
			_, err := r.machines().CreateMachine(callCtx(t), mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.Machine.Name = "" }))
			return err
		}, "machine.name is required"},
		{"machine name not DNS", func() error {
			_, err := r.machines().CreateMachine(callCtx(t), mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.Machine.Name = "Upper_Case" }))
			return err
		}, "machine.name \"Upper_Case\" must be a DNS-1123 subdomain"},
		{"machine namespace missing", func() error {
			_, err := r.machines().DeleteMachine(callCtx(t), &driverv1alpha1.DeleteMachineRequest{Machine: &driverv1alpha1.Machine{Name: "m"}, MachineClass: validClass()})
			return err
		}, "machine.namespace is required"},
		{"class missing", func() error {
			_, err := r.machines().GetMachineStatus(callCtx(t), &driverv1alpha1.GetMachineStatusRequest{Machine: validMachine("m")})
			return err
		}, "machine_class is required"},
		{"update without provider id", func() error {
			req := validUpdate("m")
			req.Machine.ProviderId = ""
			_, err := r.machines().UpdateMachine(callCtx(t), req)
			return err
		}, "machine.provider_id is required"},
		{"update without old class", func() error {
			req := validUpdate("m")
			req.OldMachineClass = nil
			_, err := r.machines().UpdateMachine(callCtx(t), req)
			return err
		}, "old_machine_class is required"},
		{"update with an old provider spec that is not an object", func() error {
			req := validUpdate("m")
			req.OldMachineClass.ProviderSpec = []byte(`[1]`)
			_, err := r.machines().UpdateMachine(callCtx(t), req)
			return err
		}, "old_machine_class.provider_spec must be a JSON object"},
		{"class name missing", func() error {
			_, err := r.machines().CreateMachine(callCtx(t), mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.MachineClass.Name = "" }))
			return err
		}, "machine_class.name is required"},
		{"class namespace missing", func() error {
			_, err := r.machines().CreateMachine(callCtx(t), mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.MachineClass.Namespace = "" }))
			return err
		}, "machine_class.namespace is required"},
		{"provider spec missing", func() error {
			_, err := r.machines().ListMachines(callCtx(t), &driverv1alpha1.ListMachinesRequest{MachineClass: &driverv1alpha1.MachineClass{Name: "c", Namespace: "default"}})
			return err
		}, "machine_class.provider_spec is required"},
		{"provider spec not an object", func() error {
			_, err := r.machines().CreateMachine(callCtx(t), mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) {
				r.MachineClass.ProviderSpec = []byte(`["` + canary + `"]`)
			}))
			return err
		}, "machine_class.provider_spec must be a JSON object"},
		{"initialize without provider id", func() error {
			_, err := r.machines().InitializeMachine(callCtx(t), &driverv1alpha1.InitializeMachineRequest{Machine: validMachine("m"), MachineClass: validClass()})
			return err
		}, "machine.provider_id is required"},
		{"volume ids without volumes", func() error {
			_, err := r.machines().GetVolumeIDs(callCtx(t), &driverv1alpha1.GetVolumeIDsRequest{})
			return err
		}, "volumes is required"},
		{"volume without spec", func() error {
			_, err := r.machines().GetVolumeIDs(callCtx(t), &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{
				{Name: "pv-0", Spec: []byte(`{}`)}, {Name: "pv-1"},
			}})
			return err
		}, "volumes[1].spec is required"},
		{"user data too large", func() error {
			_, err := r.machines().CreateMachine(callCtx(t), mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) {
				r.UserData = []byte(strings.Repeat("x", maxUserDataBytes+1))
			}))
			return err
		}, "user_data is 1048577 bytes, at most 1048576"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			requireCode(t, codes.InvalidArgument, err)
			msg := status.Convert(err).Message()
			assert.Contains(t, msg, tt.want)
			assert.NotContains(t, msg, canary, "no secret or spec content in the error")
		})
	}
	assert.Zero(t, d.calls.Load(), "the driver is not called for an invalid request")
}

func TestValidateRequestLimits(t *testing.T) {
	manySecrets := map[string][]byte{}
	for i := range maxSecretEntries + 1 {
		manySecrets[strings.Repeat("k", i+1)] = []byte("v")
	}
	manyVolumes := make([]*driverv1alpha1.PersistentVolume, maxVolumes+1)
	for i := range manyVolumes {
		manyVolumes[i] = &driverv1alpha1.PersistentVolume{Name: "pv", Spec: []byte(`{}`)}
	}
	tests := []struct {
		name string
		req  proto.Message
		want string // empty: valid
	}{
		{"valid create", validCreate("a.b-c"), ""},
		{"name of 253 characters", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.Machine.Name = strings.Repeat("a", 253) }), ""},
		{"name of 254 characters", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.Machine.Name = strings.Repeat("a", 254) }),
			"machine.name is 254 characters long, at most 253"},
		{"name ending in a dash", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.Machine.Name = "m-" }), "DNS-1123 subdomain"},
		{"namespace not a label", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.Machine.Namespace = "a.b" }), "machine.namespace \"a.b\" must be a DNS-1123 label"},
		{"class name not DNS", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.MachineClass.Name = "Big" }), "machine_class.name \"Big\""},
		{"spec is JSON null", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.MachineClass.ProviderSpec = []byte(`null`) }), "must be a JSON object"},
		{"spec is broken JSON", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.MachineClass.ProviderSpec = []byte(`{"a":`) }), "must be a JSON object"},
		{"spec is two objects", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.MachineClass.ProviderSpec = []byte(`{}{}`) }), "must be a JSON object"},
		{"spec with surrounding space", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.MachineClass.ProviderSpec = []byte(" {\"a\":1}\n") }), ""},
		{"spec too large", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) {
			r.MachineClass.ProviderSpec = []byte(`{"a":"` + strings.Repeat("x", maxProviderSpecBytes) + `"}`)
		}), "machine_class.provider_spec is"},
		{"too many secrets", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.Secrets = manySecrets }), "secrets has 65 entries, at most 64"},
		{"secrets too large", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) {
			r.Secrets = map[string][]byte{"a": make([]byte, maxSecretsBytes/2), "b": make([]byte, maxSecretsBytes/2)}
		}), "secrets is 1048578 bytes"},
		{"provider id too long", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) {
			r.Machine.ProviderId = strings.Repeat("p", maxProviderIDBytes+1)
		}),
			"machine.provider_id is 2049 bytes"},
		{"last known state too large", &driverv1alpha1.DeleteMachineRequest{Machine: validMachine("m"), MachineClass: validClass(),
			LastKnownState: strings.Repeat("s", maxLastKnownState+1)}, "last_known_state is"},
		{"delete with provider id unset", &driverv1alpha1.DeleteMachineRequest{Machine: validMachine("m"), MachineClass: validClass()}, ""},
		{"too many volumes", &driverv1alpha1.GetVolumeIDsRequest{Volumes: manyVolumes}, "volumes has 1025 entries, at most 1024"},
		{"volume without name", &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{{Spec: []byte(`{}`)}}}, "volumes[0].name is required"},
		{"volume spec not JSON", &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{
			{Name: "pv-0", Spec: []byte(`{}`)}, {Name: "pv-1", Spec: []byte(`{"csi":`)}}}, "volumes[1].spec is not valid JSON"},
		{"volume spec not an object", &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{
			{Name: "pv", Spec: []byte(`"text"`)}}}, "volumes[0].spec must be a JSON object"},
		{"volume spec null", &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{
			{Name: "pv", Spec: []byte(`null`)}}}, "volumes[0].spec must be a JSON object"},
		{"volume name sent twice", &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{
			{Name: "pv-a", Spec: []byte(`{}`)}, {Name: "pv-b", Spec: []byte(`{}`)}, {Name: "pv-a", Spec: []byte(`{}`)}}},
			`volumes[2].name "pv-a" repeats volumes[0].name`},
		{"create with a class of another namespace", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.MachineClass.Namespace = "other" }),
			`machine_class.namespace "other" must equal machine.namespace`},
		// Only CreateMachine: the other RPCs look the VM up by the
		// machine's namespace (§4.9).
		{"delete with a class of another namespace", &driverv1alpha1.DeleteMachineRequest{Machine: validMachine("m"),
			MachineClass: &driverv1alpha1.MachineClass{Name: "c", Namespace: "other", ProviderSpec: []byte(`{}`)}}, ""},
		{"volume name not DNS", &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{
			{Name: "PV_1", Spec: []byte(`{}`)}}}, "volumes[0].name \"PV_1\" must be a DNS-1123 subdomain"},
		{"uid too long", mutateCreate(func(r *driverv1alpha1.CreateMachineRequest) { r.Machine.Uid = strings.Repeat("u", 129) }),
			"machine.uid is 129 bytes, at most 128"},
		{"volume spec too large", &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{
			{Name: "pv", Spec: make([]byte, maxVolumeSpecBytes+1)}}}, "volumes[0].spec is 65537 bytes"},
		{"identity request", &driverv1alpha1.ProbeRequest{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateRequest(tt.req)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

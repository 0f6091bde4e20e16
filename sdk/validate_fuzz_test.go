package sdk

import (
	"encoding/base64"
	"strings"
	"testing"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"google.golang.org/protobuf/proto"
)

// FuzzValidateRequest decodes arbitrary wire bytes into each Driver API
// request, puts the canary into every secret (secrets and user data) and
// checks that validation never panics and that its error never contains a
// secret: validation errors name fields and rules, never secret values.
func FuzzValidateRequest(f *testing.F) {
	for _, req := range []proto.Message{
		validCreate("m1"),
		&driverv1alpha1.DeleteMachineRequest{Machine: validMachine("m1"), MachineClass: validClass()},
		&driverv1alpha1.GetMachineStatusRequest{Machine: &driverv1alpha1.Machine{Name: "UPPER", Namespace: "default"}, MachineClass: validClass()},
		&driverv1alpha1.ListMachinesRequest{MachineClass: &driverv1alpha1.MachineClass{Name: "c", Namespace: "default", ProviderSpec: []byte("\f{}")}},
		&driverv1alpha1.InitializeMachineRequest{Machine: validMachine("m1"), MachineClass: validClass()},
		&driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{{Name: "pv", Spec: []byte(`{"csi":{}}`)}}},
	} {
		b, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		for kind := range uint8(6) {
			f.Add(kind, b, "value")
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, wire []byte, suffix string) {
		secret := canary + suffix
		var req proto.Message
		switch kind % 6 {
		case 0:
			r := &driverv1alpha1.CreateMachineRequest{}
			_ = proto.Unmarshal(wire, r)
			r.Secrets = map[string][]byte{"userData": []byte(secret), "k": []byte(secret)}
			r.UserData = []byte(secret)
			req = r
		case 1:
			r := &driverv1alpha1.DeleteMachineRequest{}
			_ = proto.Unmarshal(wire, r)
			r.Secrets = map[string][]byte{"k": []byte(secret)}
			req = r
		case 2:
			r := &driverv1alpha1.GetMachineStatusRequest{}
			_ = proto.Unmarshal(wire, r)
			r.Secrets = map[string][]byte{"k": []byte(secret)}
			req = r
		case 3:
			r := &driverv1alpha1.ListMachinesRequest{}
			_ = proto.Unmarshal(wire, r)
			r.Secrets = map[string][]byte{"k": []byte(secret)}
			req = r
		case 4:
			r := &driverv1alpha1.InitializeMachineRequest{}
			_ = proto.Unmarshal(wire, r)
			r.Secrets = map[string][]byte{"k": []byte(secret)}
			req = r
		default:
			r := &driverv1alpha1.GetVolumeIDsRequest{}
			_ = proto.Unmarshal(wire, r)
			req = r
		}
		if strings.Contains(string(wire), canary) {
			return // the fuzzer wrote the canary into a non-secret field itself
		}
		err := validateRequest(req)
		if err == nil {
			return
		}
		if msg := err.Error(); strings.Contains(msg, canary) || strings.Contains(msg, base64.StdEncoding.EncodeToString([]byte(canary))) {
			t.Fatalf("validation error quotes a secret: %v", msg)
		}
	})
}

// FuzzParseEndpoint checks the driver endpoint parser: no panic, and what
// it accepts is a unix socket with an absolute, clean path that fits
// sun_path, or a tcp host:port.
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{"unix:///var/run/machina/driver.sock", "unix://relative", "unix://", "unix:///a/../../b",
		"tcp://127.0.0.1:9000", "tcp://[::1]:1", "tcp://nope", "http://x", "unix:///" + strings.Repeat("x", 120)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ep, err := parseEndpoint(s)
		if err != nil {
			return
		}
		switch ep.network {
		case "unix":
			if !strings.HasPrefix(ep.address, "/") || len(ep.address) > maxSocketPathBytes {
				t.Fatalf("accepted unix endpoint %q as %q", s, ep.address)
			}
		case "tcp":
			if ep.address == "" {
				t.Fatalf("accepted tcp endpoint %q without an address", s)
			}
		default:
			t.Fatalf("network %q for %q", ep.network, s)
		}
	})
}

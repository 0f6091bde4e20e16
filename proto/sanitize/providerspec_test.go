package sanitize

import (
	"encoding/base64"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/anypb"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func createWithSpec(spec string) *driverv1alpha1.CreateMachineRequest {
	return &driverv1alpha1.CreateMachineRequest{
		Machine:      &driverv1alpha1.Machine{Name: "m-1", Namespace: "ns"},
		MachineClass: &driverv1alpha1.MachineClass{Name: "c", Namespace: "ns", ProviderSpec: []byte(spec)},
		Secrets:      map[string][]byte{"accessKey": []byte(canary)},
	}
}

func TestProviderSpecShownAsJSONObject(t *testing.T) {
	spec := `{"machineType":"m5.large","tags":{"team":"a"},"count":12345678901234567890,"html":"<b>"}`
	s := String(createWithSpec(spec))
	assert.Contains(t, s, `"providerSpec":{"count":12345678901234567890,"html":"<b>","machineType":"m5.large","tags":{"team":"a"}}`)
	assert.NotContains(t, s, base64.StdEncoding.EncodeToString([]byte(spec)))
	assert.NotContains(t, s, "machina-sanitize-", "no placeholder is left")
	assertNoCanary(t, s)
}

func TestProviderSpecSecretLookingKeysStripped(t *testing.T) {
	spec := `{"region":"eu","password":"` + canary + `","auth":{"client_secret":"` + canary + `","apiToken":["` + canary + `"]},` +
		`"nodes":[{"ACCESS-KEY-ID":"` + canary + `","name":"n"}],"credentials":{"user":"` + canary + `"}}`
	s := String(createWithSpec(spec))
	assertNoCanary(t, s)
	assert.Contains(t, s, `"region":"eu"`)
	assert.Contains(t, s, `"password":"`+Redacted+`"`)
	assert.Contains(t, s, `"client_secret":"`+Redacted+`"`)
	assert.Contains(t, s, `"apiToken":"`+Redacted+`"`, "a secret key's whole value is replaced, a list too")
	assert.Contains(t, s, `"ACCESS-KEY-ID":"`+Redacted+`"`)
	assert.Contains(t, s, `"name":"n"`)
	assert.Contains(t, s, `"credentials":"`+Redacted+`"`, "an object under a secret key is replaced whole")
}

func TestProviderSpecNotJSONShownAsLength(t *testing.T) {
	for name, spec := range map[string]string{
		"garbage":          "password=" + canary,
		"trailing garbage": `{"a":1} ` + canary,
	} {
		t.Run(name, func(t *testing.T) {
			s := String(createWithSpec(spec))
			assertNoCanary(t, s)
			assert.NotContains(t, s, base64.StdEncoding.EncodeToString([]byte(spec)))
			assert.Contains(t, s, `"providerSpec":"<`+strconv.Itoa(len(spec))+` bytes, not JSON>"`)
		})
	}
}

func TestProviderSpecInEveryPosition(t *testing.T) {
	// The old class of an update and a class in an Any get the same
	// treatment as the class of a create.
	upd := &driverv1alpha1.UpdateMachineRequest{
		Machine:         &driverv1alpha1.Machine{Name: "m"},
		MachineClass:    &driverv1alpha1.MachineClass{Name: "new", ProviderSpec: []byte(`{"token":"` + canary + `","v":2}`)},
		OldMachineClass: &driverv1alpha1.MachineClass{Name: "old", ProviderSpec: []byte(`{"token":"` + canary + `","v":1}`)},
	}
	s := String(upd)
	assertNoCanary(t, s)
	assert.Contains(t, s, `{"token":"`+Redacted+`","v":2}`)
	assert.Contains(t, s, `{"token":"`+Redacted+`","v":1}`)

	packed, err := anypb.New(createWithSpec(`{"token":"` + canary + `","v":3}`))
	require.NoError(t, err)
	s = String(packed)
	assertNoCanary(t, s)
	assert.Contains(t, s, `{"token":"`+Redacted+`","v":3}`)
}

func TestMessageKeepsProviderSpecBytes(t *testing.T) {
	// Message is used for more than logs; only String renders the spec.
	req := createWithSpec(`{"password":"p"}`)
	got := Message(req).(*driverv1alpha1.CreateMachineRequest)
	assert.Equal(t, []byte(`{"password":"p"}`), got.GetMachineClass().GetProviderSpec())
}

func TestSecretKey(t *testing.T) {
	for _, k := range []string{"password", "dbPasswd", "clientSecret", "secret_access_key", "token", "apiKey", "API-KEY", "accessKeyID", "private.key", "credentialsJSON", "sessionKey", "connectionString"} {
		assert.True(t, secretKey(k), k)
	}
	for _, k := range []string{"keyName", "sshKeys", "machineType", "region", "tags", "kmsKeyID", "serviceAccount", "authorizedKeys"} {
		assert.False(t, secretKey(k), k)
	}
}

package bootstrap

import (
	"bytes"
	"net/url"
	"regexp"
	"testing"
)

var dnsName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// FuzzRender renders any user data with any machine name (a valid object
// name, as the API server guarantees) and checks: the input is never
// modified; no placeholder is left, plain or URL-encoded; and the bootstrap
// token reaches the output only when the user data asked for one
// (NeedsToken), so that a machine whose user data does not ask gets none.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		"name=<<MACHINE_NAME>> token=<<BOOTSTRAP_TOKEN>>",
		"url=https://x/?n=%3C%3CMACHINE_NAME%3E%3E&t=%3C%3CBOOTSTRAP_TOKEN%3E%3E",
		"<<<<MACHINE_NAME>>BOOTSTRAP_TOKEN>>", "<<BOOTSTRAP_<<MACHINE_NAME>>", "%3C%3CBOOTSTRAP_TOKEN%3E%3E%3E",
		"#cloud-config\nruncmd: [kubeadm join --token <<BOOTSTRAP_TOKEN>>]\n", "",
	} {
		f.Add([]byte(s), "worker-1")
	}
	const token = "zq7k2m.q8v4n1x0c3b6z9l5"
	f.Fuzz(func(t *testing.T, userData []byte, name string) {
		if !dnsName.MatchString(name) || len(name) > 253 || bytes.Contains(userData, []byte(token)) {
			return
		}
		orig := bytes.Clone(userData)
		out := Render(userData, name, token)
		if !bytes.Equal(orig, userData) {
			t.Fatalf("Render modified its input")
		}
		hasToken := bytes.Contains(out, []byte(token)) || bytes.Contains(out, []byte(url.QueryEscape(token)))
		if hasToken && !NeedsToken(userData) {
			t.Fatalf("the token reached user data that did not ask for one: %q", userData)
		}
		if NeedsToken(userData) && !hasToken {
			t.Fatalf("user data asked for a token and did not get it: %q -> %q", userData, out)
		}
		for _, p := range []string{machineNamePlaceholder, bootstrapTokenPlaceholder} {
			if !bytes.Contains(userData, []byte(p)) && !bytes.Contains(userData, []byte(url.QueryEscape(p))) {
				continue
			}
			// A placeholder may be formed anew by the replacement itself
			// ("<<<<MACHINE_NAME>>..."); what was written is replaced.
			if bytes.Count(out, []byte(p)) >= bytes.Count(userData, []byte(p)) && bytes.Count(userData, []byte(p)) > 0 {
				t.Fatalf("placeholder %s left in %q", p, out)
			}
		}
	})
}

package sanitize

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// jsonFields are the bytes fields that hold JSON for a human to read.
// protojson renders bytes base64-encoded, which hides them from a reader of
// the log (and from a reviewer looking for a secret in it); String renders
// them as the JSON they hold instead (see renderJSONField).
var jsonFields = map[protoreflect.FullName]bool{
	"machina.driver.v1alpha1.MachineClass.provider_spec": true,
}

// secretKeyWords are the parts of a JSON key that mark its value as secret
// looking. The Driver API says the provider spec is not secret and
// credentials belong in the class's secrets (driver-api.md §4.4), but a
// class author can still put a password there; the log must not be where it
// leaks. Keys are compared in lower case with '-', '_' and '.' removed, so
// "access_key_id", "accessKeyID" and "access-key" all match "accesskey".
var secretKeyWords = []string{
	"password", "passwd", "secret", "token", "credential",
	"apikey", "accesskey", "privatekey", "sessionkey", "connectionstring",
}

// secretKey reports whether a JSON key looks like it names a secret.
func secretKey(k string) bool {
	norm := strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.':
			return -1
		}
		return r
	}, strings.ToLower(k))
	for _, w := range secretKeyWords {
		if strings.Contains(norm, w) {
			return true
		}
	}
	return false
}

// renderJSONField renders the value of a JSON bytes field: the JSON it
// holds, with the value of every secret-looking key replaced by Redacted,
// when it is valid JSON; otherwise only its length, since bytes that are not
// JSON cannot be searched for secrets.
func renderJSONField(b []byte) string {
	if !json.Valid(b) {
		return strconv.Quote(fmt.Sprintf("<%d bytes, not JSON>", len(b)))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	// Numbers keep their exact form; float64 would round large integers.
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return strconv.Quote(fmt.Sprintf("<%d bytes, not JSON>", len(b)))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(stripJSON(v)); err != nil {
		return strconv.Quote(fmt.Sprintf("<%d bytes>", len(b)))
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// stripJSON replaces the value of every secret-looking key, at any depth,
// with Redacted. Keys stay visible, like the keys of the secrets map.
func stripJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if secretKey(k) {
				x[k] = Redacted
			} else {
				x[k] = stripJSON(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = stripJSON(e)
		}
	}
	return v
}

// placeholderNonce makes the placeholders of this process unguessable, so
// no field value can pose as one.
var placeholderNonce = func() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

// jsonRenderings collects, while a message is stripped for String, the
// rendering of each JSON field; the field's value in the copy is replaced
// by a placeholder that String swaps for the rendering after marshalling.
// This keeps protojson's field order and handles JSON fields at any depth
// (also inside an Any) without a second walk.
type jsonRenderings struct {
	rendered []string
}

// hold records the rendering of b and returns its placeholder.
func (j *jsonRenderings) hold(b []byte) []byte {
	j.rendered = append(j.rendered, renderedJSON.get(b))
	return []byte(j.placeholder(len(j.rendered) - 1))
}

func (j *jsonRenderings) placeholder(i int) string {
	return "machina-sanitize-" + placeholderNonce + "-" + strconv.Itoa(i)
}

// fill puts the renderings into s, protojson output (bytes base64) or,
// when json is false, prototext output (bytes as a quoted string, where the
// rendering goes as a quoted string too).
func (j *jsonRenderings) fill(s string, asJSON bool) string {
	for i, r := range j.rendered {
		p := j.placeholder(i)
		if asJSON {
			s = strings.Replace(s, strconv.Quote(base64.StdEncoding.EncodeToString([]byte(p))), r, 1)
		} else {
			s = strings.Replace(s, strconv.Quote(p), strconv.Quote(r), 1)
		}
	}
	return s
}

// renderedJSON keeps the renderings of the JSON fields rendered last. The
// calls about the machines of one class carry the same provider spec, and
// decoding and encoding it again is most of what logging such a call
// costs. Small values only, and a bounded number of them: a key is the
// field as it came, the same bytes the process holds in its requests.
var renderedJSON = jsonCache{m: map[string]string{}}

const (
	jsonCacheEntries  = 128
	jsonCacheMaxBytes = 8 << 10
)

type jsonCache struct {
	mu sync.Mutex
	m  map[string]string
}

// get returns renderJSONField(b), from the cache when it holds it.
func (c *jsonCache) get(b []byte) string {
	if len(b) > jsonCacheMaxBytes {
		return renderJSONField(b)
	}
	c.mu.Lock()
	r, ok := c.m[string(b)]
	c.mu.Unlock()
	if ok {
		return r
	}
	r = renderJSONField(b)
	c.mu.Lock()
	if len(c.m) >= jsonCacheEntries {
		clear(c.m)
	}
	c.m[string(b)] = r
	c.mu.Unlock()
	return r
}

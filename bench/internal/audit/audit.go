// Package audit counts the requests an API server served, by user, verb and
// resource, from its audit log (JSON lines, one event per request).
//
// The benchmarks use it to tell the manager's requests from the simulated
// kubelet's: apiserver_request_total has no user label, the audit log names
// the authenticated user of every request.
package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// Policy returns an audit policy that records, at level Metadata, the
// requests of the given users once each (when the response is complete),
// and nothing of anyone else, so that a benchmark's own client and the
// control plane's loopback requests cost the API server no audit writes.
func Policy(users ...string) string {
	quoted := make([]string, len(users))
	for i, u := range users {
		quoted[i] = fmt.Sprintf("%q", u)
	}
	return fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  users: [%s]
- level: None
`, strings.Join(quoted, ", "))
}

// event is the part of an audit.k8s.io/v1 Event the counts need.
type event struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// Key identifies one kind of request.
type Key struct {
	User string
	// Verb is the API verb: get, list, watch, create, update, patch,
	// delete, deletecollection.
	Verb string
	// Resource is the resource, with "/subresource" when there is one
	// (e.g. "machines/status"); "" for non-resource URLs.
	Resource string
}

// Counts holds the requests of a stretch of an audit log.
type Counts struct {
	// Requests counts the requests by kind.
	Requests map[Key]int
	// Conflicts counts the requests answered 409 Conflict, by user.
	Conflicts map[string]int
	// PerSecond counts each user's requests by the second they arrived in
	// (Unix seconds), to show the rate a client actually reached.
	PerSecond map[string]map[int64]int
}

// Size returns the size of the log at path: the offset where the events of
// requests served from now on begin. A log that does not exist yet has
// size 0.
func Size(path string) (int64, error) {
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Read counts the events of the log at path between the byte offsets from
// and to (as returned by Size before and after a stretch of work).
func Read(path string, from, to int64) (*Counts, error) {
	if to < from {
		return nil, fmt.Errorf("audit log %s shrank from %d to %d bytes (rotated?): the requests of this stretch are lost", path, from, to)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, err
	}
	return Count(io.LimitReader(f, to-from))
}

// Count counts the events read from r, one JSON event per line.
func Count(r io.Reader) (*Counts, error) {
	c := &Counts{
		Requests:  map[Key]int{},
		Conflicts: map[string]int{},
		PerSecond: map[string]map[int64]int{},
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log line %d: %w", line, err)
		}
		if e.Stage != "ResponseComplete" && e.Stage != "Panic" {
			continue
		}
		k := Key{User: e.User.Username, Verb: e.Verb}
		if e.ObjectRef != nil {
			k.Resource = e.ObjectRef.Resource
			if e.ObjectRef.Subresource != "" {
				k.Resource += "/" + e.ObjectRef.Subresource
			}
		}
		c.Requests[k]++
		if e.ResponseStatus != nil && e.ResponseStatus.Code == 409 {
			c.Conflicts[k.User]++
		}
		if !e.RequestReceivedTimestamp.IsZero() {
			s := c.PerSecond[k.User]
			if s == nil {
				s = map[int64]int{}
				c.PerSecond[k.User] = s
			}
			s[e.RequestReceivedTimestamp.Unix()]++
		}
	}
	return c, sc.Err()
}

// IsWrite tells whether verb changes state.
func IsWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// ByVerbResource returns user's request counts keyed "verb resource",
// e.g. "patch machines/status".
func (c *Counts) ByVerbResource(user string) map[string]int {
	out := map[string]int{}
	for k, n := range c.Requests {
		if k.User == user {
			out[k.Verb+" "+k.Resource] += n
		}
	}
	return out
}

// Total returns user's requests whose verb and resource match keep.
func (c *Counts) Total(user string, keep func(verb, resource string) bool) int {
	n := 0
	for k, v := range c.Requests {
		if k.User == user && keep(k.Verb, k.Resource) {
			n += v
		}
	}
	return n
}

// PeakPerSecond returns the most requests user made within one second.
func (c *Counts) PeakPerSecond(user string) int {
	peak := 0
	for _, n := range c.PerSecond[user] {
		peak = max(peak, n)
	}
	return peak
}

// SortedKeys returns the keys of m in order, for stable output.
func SortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

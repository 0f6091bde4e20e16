package setup

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func cachedAt(uid types.UID, rv string) *v1alpha1.Machine {
	return &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{UID: uid, ResourceVersion: rv}}
}

// A cached copy older than the recorded write is stale until the cache
// shows the write or a later version; then the write is forgotten.
func TestWrittenCheckComparesVersions(t *testing.T) {
	var w Written[string]
	_, f := w.Check(cachedAt("a", "5"), t0)
	assert.Equal(t, Fresh, f, "nothing recorded")

	w.Record("a", "10", "what", t0)
	wr, f := w.Check(cachedAt("a", "9"), t0)
	assert.Equal(t, Stale, f)
	assert.Equal(t, Write[string]{Version: "10", Value: "what", At: t0}, wr)
	_, f = w.Check(cachedAt("a", "9"), t0)
	assert.Equal(t, Stale, f, "a stale copy keeps the write recorded")
	_, f = w.Check(cachedAt("b", "1"), t0)
	assert.Equal(t, Fresh, f, "writes are per object")

	_, f = w.Check(cachedAt("a", "10"), t0)
	assert.Equal(t, Fresh, f, "the cache shows the write")
	_, ok := w.Get("a", t0)
	assert.False(t, ok, "a write the cache shows is forgotten")

	w.Record("a", "10", "", t0)
	_, f = w.Check(cachedAt("a", "11"), t0)
	assert.Equal(t, Fresh, f, "a later version shows the write too")
	_, ok = w.Get("a", t0)
	assert.False(t, ok)
}

// Versions that cannot be ordered leave the decision to the caller, and
// keep the write; equal ones show it whatever they are.
func TestWrittenCheckUnorderedVersions(t *testing.T) {
	var w Written[struct{}]
	w.Record("a", "x7", struct{}{}, t0)
	wr, f := w.Check(cachedAt("a", "x6"), t0)
	assert.Equal(t, Unordered, f)
	assert.Equal(t, "x7", wr.Version)
	_, ok := w.Get("a", t0)
	assert.True(t, ok)

	_, f = w.Check(cachedAt("a", "x7"), t0)
	assert.Equal(t, Fresh, f)

	w.Record("a", "", struct{}{}, t0)
	_, f = w.Check(cachedAt("a", "3"), t0)
	assert.Equal(t, Unordered, f, "a write recorded without a version")
}

// ForgetVersion forgets a write only if no later one was recorded; Forget
// forgets it whatever it is.
func TestWrittenForget(t *testing.T) {
	var w Written[struct{}]
	w.Record("a", "10", struct{}{}, t0)
	w.Record("a", "11", struct{}{}, t0)
	w.ForgetVersion("a", "10")
	wr, ok := w.Get("a", t0)
	assert.True(t, ok, "a write made meanwhile stays recorded")
	assert.Equal(t, "11", wr.Version)
	w.ForgetVersion("a", "11")
	_, ok = w.Get("a", t0)
	assert.False(t, ok)

	w.Record("a", "12", struct{}{}, t0)
	w.Forget("a")
	_, ok = w.Get("a", t0)
	assert.False(t, ok)
}

// A write the cache never shows is forgotten after the TTL: when asked for,
// or, for an object never reconciled again, by the sweep of a later Record.
func TestWrittenTTL(t *testing.T) {
	w := Written[struct{}]{TTL: time.Minute}
	w.Record("asked", "10", struct{}{}, t0)
	w.Record("gone", "10", struct{}{}, t0)

	_, f := w.Check(cachedAt("asked", "9"), t0.Add(time.Minute))
	assert.Equal(t, Stale, f, "still within the TTL")
	_, f = w.Check(cachedAt("asked", "9"), t0.Add(time.Minute+1))
	assert.Equal(t, Fresh, f, "past the TTL the cache is trusted again")
	assert.NotContains(t, w.writes, types.UID("asked"))
	assert.Contains(t, w.writes, types.UID("gone"), "not swept before a Record")

	w.Record("other", "1", struct{}{}, t0.Add(2*time.Minute))
	assert.NotContains(t, w.writes, types.UID("gone"), "swept by a later Record")
	assert.Contains(t, w.writes, types.UID("other"))

	var d Written[struct{}]
	d.Record("a", "10", struct{}{}, t0)
	_, ok := d.Get("a", t0.Add(DefaultWrittenTTL))
	assert.True(t, ok, "the zero value keeps a write DefaultWrittenTTL")
	_, ok = d.Get("a", t0.Add(DefaultWrittenTTL+1))
	assert.False(t, ok)
}

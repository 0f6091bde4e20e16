package node

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAddedTrustsItsOwnWriteForAGracePeriod(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var a added
	assert.Zero(t, a.pending("n1", t0), "nothing written: believe the cache")

	a.record("n1", t0)
	assert.Equal(t, addedGrace-time.Second, a.pending("n1", t0.Add(time.Second)), "written a second ago")
	assert.Zero(t, a.pending("n2", t0.Add(time.Second)), "another node")
	assert.Zero(t, a.pending("n1", t0.Add(addedGrace)), "past the grace period the cache is believed again")
	assert.Zero(t, a.pending("n1", t0.Add(time.Second)), "and the record is gone")

	a.record("n1", t0)
	a.seen("n1")
	assert.Zero(t, a.pending("n1", t0), "the cache showed the finalizer")
}

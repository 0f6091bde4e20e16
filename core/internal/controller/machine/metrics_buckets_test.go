package machine

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A drain of a Node with nothing to evict takes milliseconds and a forced
// one ends after the drain timeout (2h by default): the buckets tell both
// apart from the rest.
func TestDrainBuckets(t *testing.T) {
	assert.Less(t, drainBuckets[0], 1.0, "buckets under a second")
	assert.Greater(t, drainBuckets[len(drainBuckets)-1], 2*60*60.0, "a bucket above the default drain timeout")
}

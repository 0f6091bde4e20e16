package driver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMachineLocks(t *testing.T) {
	l := newMachineLocks()
	ctx := context.Background()

	unlockA, err := l.lock(ctx, "ns/a")
	require.NoError(t, err)
	// Another key is independent.
	unlockB, err := l.lock(ctx, "ns/b")
	require.NoError(t, err)
	unlockB()

	// The same key waits until the holder releases it.
	acquired := make(chan func(), 1)
	go func() {
		unlock, err := l.lock(ctx, "ns/a")
		if err == nil {
			acquired <- unlock
		}
	}()
	require.Eventually(t, func() bool { return l.users("ns/a") == 2 }, 5*time.Second, time.Millisecond)
	select {
	case <-acquired:
		t.Fatal("lock acquired while held")
	default:
	}
	unlockA()
	unlock := <-acquired
	unlock()
	assert.Zero(t, l.users("ns/a"))
	assert.Empty(t, l.locks, "released locks must be forgotten")
}

func TestMachineLockWaitCancelled(t *testing.T) {
	l := newMachineLocks()
	unlock, err := l.lock(context.Background(), "ns/a")
	require.NoError(t, err)
	defer unlock()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = l.lock(ctx, "ns/a")
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, l.users("ns/a"), "an abandoned wait must not leave a user behind")
}

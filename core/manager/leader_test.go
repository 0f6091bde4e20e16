package manager

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/testenv"
)

// TestStopReleasesALeaseWonWhileStopping: a standby that wins the lease
// while it is being stopped (its write reached the API server, its answer
// was lost to the stop) never starts a term, and must still release the
// lease on the way out; otherwise the lease names a replica that is gone
// until it expires. This is what a graceful stop of two replicas hits when
// the leader stops first and the standby takes the released lease.
func TestStopReleasesALeaseWonWhileStopping(t *testing.T) {
	env := testenv.Start(t)
	ns := "lease"
	require.NoError(t, env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	lock, err := newLeaseLock(env.Config, ns, nil, 5*time.Second)
	require.NoError(t, err)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	lock.Interface = &answerLostOnWin{Interface: lock.Interface, stop: stop}

	e := &elector{
		m: &Manager{log: logr.Discard(), opts: Options{
			LeaderElectLeaseDuration: 15 * time.Second,
			LeaderElectRenewDeadline: 10 * time.Second,
			LeaderElectRetryPeriod:   2 * time.Second,
		}},
		lock: lock,
		runTerm: func(ctx context.Context) error {
			t.Error("a term started although the replica was stopping")
			<-ctx.Done()
			return nil
		},
	}
	assert.False(t, e.campaign(ctx), "the replica reports that it led")

	lease := &coordinationv1.Lease{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: LeaderElectionID}, lease))
	assert.True(t, lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "",
		"the stopped replica still holds the lease: %v", lease.Spec.HolderIdentity)
}

// answerLostOnWin writes the lease, and when the write makes this replica
// the holder, stops the replica and reports the write as failed: the
// answer of a request the API server applied, lost to the stop.
type answerLostOnWin struct {
	resourcelock.Interface
	stop context.CancelFunc
}

func (l *answerLostOnWin) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.lose(r, l.Interface.Create(ctx, r))
}

func (l *answerLostOnWin) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.lose(r, l.Interface.Update(ctx, r))
}

func (l *answerLostOnWin) lose(r resourcelock.LeaderElectionRecord, err error) error {
	if err != nil || r.HolderIdentity != l.Identity() {
		return err
	}
	l.stop()
	return context.Canceled
}
